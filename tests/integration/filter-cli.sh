#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# breachctl filter build/info/verify/query as a user runs them: exit
# statuses, messages, no output on failure, determinism, damage detection.
# Usage: filter-cli.sh BREACHCTL SOURCE_ROOT
set -euo pipefail
ctl=$1
src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/breachd-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*" >&2; fail=$((fail + 1)); }
# expect STATUS DESCRIPTION CMD...: run CMD, compare its exit status.
expect() {
  local want=$1 what=$2
  shift 2
  local got=0
  "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, expected $want ($(cat "$tmp/err"))"; fi
}
contains() { # contains FILE TEXT DESCRIPTION
  if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in: $(cat "$1")"; fi
}
sha1() { printf '%s' "$1" | sha1sum | cut -c1-40 | tr a-f A-F; }

# --- inputs: HIBP single file (CRLF), per-prefix dir, plain list, plaintext
pw_hash=$(sha1 password)          # 5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8
letmein=$(sha1 letmein)
dragon=$(sha1 dragon)
printf '%s:10\r\n%s:0\r\n%s:3\r\n' "$pw_hash" "$dragon" "$letmein" >"$tmp/single.txt"
mkdir "$tmp/dir"
printf '%s:7\r\n' "${dragon:5}" >"$tmp/dir/${dragon:0:5}.txt"
echo "index" >"$tmp/dir/index.json"
echo "$(sha1 qwerty)" | tr A-F a-f >"$tmp/plain.txt"

expect 0 "build from single file" "$ctl" filter build --kind password-sha1 --output "$tmp/a.bfuse" \
  --input "$tmp/single.txt"
contains "$tmp/err" "2 keys from 3 lines (1 padding" "build summary"
expect 0 "query present" "$ctl" filter query "$tmp/a.bfuse" "$pw_hash" "$(echo "$letmein" | tr A-F a-f)"
[ "$(cat "$tmp/out")" = "$(printf 'maybe\nmaybe')" ] && ok || bad "query output: $(cat "$tmp/out")"
expect 0 "query count-0 hash" "$ctl" filter query "$tmp/a.bfuse" "$dragon"
[ "$(cat "$tmp/out")" = "no" ] && ok || bad "count-0 line was indexed"

printf 'password\r\nsunshine\n' >"$tmp/plaintext"
# --plaintext applies to every input of the build, so the hash files above
# were read as passwords too; check the plaintext-only build instead.
expect 0 "plaintext build" "$ctl" filter build --kind password-sha1 --output "$tmp/p.bfuse" \
  --plaintext --input - <"$tmp/plaintext"
printf '%s\n' "$pw_hash" "$(sha1 sunshine)" | "$ctl" filter query "$tmp/p.bfuse" >"$tmp/out"
[ "$(cat "$tmp/out")" = "$(printf 'maybe\nmaybe')" ] && ok || bad "plaintext query: $(cat "$tmp/out")"
grep -q sunshine "$tmp/err" && bad "a password was printed" || ok

expect 0 "build from dir + plain list" "$ctl" filter build --kind password-sha1 \
  --output "$tmp/c.bfuse" --input "$tmp/dir" --input "$tmp/plain.txt"
printf '%s\n' "$dragon" "$(sha1 qwerty)" | "$ctl" filter query "$tmp/c.bfuse" >"$tmp/out"
[ "$(cat "$tmp/out")" = "$(printf 'maybe\nmaybe')" ] && ok || bad "dir/plain query: $(cat "$tmp/out")"

# --min-count
expect 0 "min-count" "$ctl" filter build --kind password-sha1 --output "$tmp/m.bfuse" \
  --input "$tmp/single.txt" --min-count 5
expect 0 "query min-count" "$ctl" filter query "$tmp/m.bfuse" "$pw_hash" "$letmein"
[ "$(cat "$tmp/out")" = "$(printf 'maybe\nno')" ] && ok || bad "min-count query: $(cat "$tmp/out")"

# --- a malformed line: FILE:LINE, exit 2, no output file, no temporary left
printf '%s:1\n%s:2\nNOTAHASH:3\n' "$pw_hash" "$letmein" >"$tmp/broken.txt"
mkdir "$tmp/outdir"
expect 2 "malformed line" "$ctl" filter build --kind password-sha1 --output "$tmp/outdir/x.bfuse" \
  --input "$tmp/broken.txt"
contains "$tmp/err" "$tmp/broken.txt:3:" "malformed line names FILE:LINE"
[ -z "$(ls -A "$tmp/outdir")" ] && ok || bad "output left behind: $(ls "$tmp/outdir")"

# --- other downloaders' layouts build the same filter as the flat directory:
# the official single file (a BOM before every block, CRLF), gzip files, a
# nested tree; NTLM input is named as such
export SOURCE_DATE_EPOCH=1764460800
bom=$'\xef\xbb\xbf'
printf '%s%s:10\r\n%s:0\r\n%s%s:3\r\n' "$bom" "$pw_hash" "$dragon" "$bom" "$letmein" >"$tmp/official.txt"
expect 0 "official single file" "$ctl" filter build --kind password-sha1 --output "$tmp/o1" \
  --input "$tmp/official.txt" --source same
expect 0 "plain single file" "$ctl" filter build --kind password-sha1 --output "$tmp/o0" \
  --input "$tmp/single.txt" --source same
cmp -s "$tmp/o0" "$tmp/o1" && ok || bad "BOM single file builds another filter"
gzip -c "$tmp/official.txt" >"$tmp/official.txt.gz"
expect 0 "gzip single file" "$ctl" filter build --kind password-sha1 --output "$tmp/o2" \
  --input "$tmp/official.txt.gz" --source same
cmp -s "$tmp/o0" "$tmp/o2" && ok || bad "gzip single file builds another filter"
mkdir -p "$tmp/tree/${dragon:0:2}/${dragon:2:2}" "$tmp/tree/${pw_hash:0:2}"
printf '%s%s:7\r\n' "$bom" "${dragon:5}" >"$tmp/tree/${dragon:0:2}/${dragon:2:2}/${dragon:0:5}.txt"
printf '%s:10\n' "${pw_hash:5}" | gzip >"$tmp/tree/${pw_hash:0:2}/${pw_hash:0:5}.gz"
printf '%s:3\n' "${letmein:5}" | gzip >"$tmp/tree/${letmein:0:5}.txt.gz"
mkdir "$tmp/flat"
printf '%s:7\n' "${dragon:5}" >"$tmp/flat/${dragon:0:5}.txt"
printf '%s:10\n' "${pw_hash:5}" >"$tmp/flat/${pw_hash:0:5}.txt"
printf '%s:3\n' "${letmein:5}" >"$tmp/flat/${letmein:0:5}.txt"
expect 0 "nested gzip tree" "$ctl" filter build --kind password-sha1 --output "$tmp/t1" \
  --input "$tmp/tree" --source same
expect 0 "flat dir" "$ctl" filter build --kind password-sha1 --output "$tmp/t0" \
  --input "$tmp/flat" --source same
cmp -s "$tmp/t0" "$tmp/t1" && ok || bad "nested gzip tree builds another filter"
unset SOURCE_DATE_EPOCH
printf '8846F7EAEE8FB117AD06BDD830B7586C:10\r\n' >"$tmp/ntlm.txt"
expect 2 "NTLM corpus" "$ctl" filter build --kind password-sha1 --output "$tmp/z" --input "$tmp/ntlm.txt"
contains "$tmp/err" "$tmp/ntlm.txt:1: the hash has 32 hex digits: this is an NTLM corpus; use --kind password-ntlm" \
  "NTLM corpus named"

# --- no silent empty filters: 0 keys fails (old output kept) unless --allow-empty
printf '%s:0\r\n\r\n' "$pw_hash" >"$tmp/padding-only.txt"
cp "$tmp/a.bfuse" "$tmp/keep.bfuse"
expect 2 "0 keys" "$ctl" filter build --kind password-sha1 --output "$tmp/keep.bfuse" \
  --input "$tmp/padding-only.txt"
contains "$tmp/err" "no keys in the input (2 lines)" "0 keys message"
cmp -s "$tmp/a.bfuse" "$tmp/keep.bfuse" && ok || bad "old output replaced by a failed empty build"
expect 0 "0 keys --allow-empty" "$ctl" filter build --kind password-sha1 --output "$tmp/empty.bfuse" \
  --input "$tmp/padding-only.txt" --allow-empty
expect 0 "empty filter info" "$ctl" filter info "$tmp/empty.bfuse"
contains "$tmp/out" "keys:              0" "empty filter key count"

# --- determinism: same input, same build time -> same bytes, any thread count
export SOURCE_DATE_EPOCH=1764460800
expect 0 "det 1" "$ctl" filter build --kind password-sha1 --output "$tmp/d1" --input "$tmp/single.txt" \
  --input "$tmp/dir" --threads 1 --source same
expect 0 "det 2" "$ctl" filter build --kind password-sha1 --output "$tmp/d2" --input "$tmp/dir" \
  --input "$tmp/single.txt" --threads 2 --source same
cmp -s "$tmp/d1" "$tmp/d2" && ok || bad "builds differ"
expect 0 "det 3: a tiny memory budget (one thread)" "$ctl" filter build --kind password-sha1 \
  --output "$tmp/d3" --input "$tmp/single.txt" --input "$tmp/dir" --threads 2 --memory 1K --source same
cmp -s "$tmp/d1" "$tmp/d3" && ok || bad "memory-capped build differs"
expect 2 "bad --memory" "$ctl" filter build --kind password-sha1 --output "$tmp/z" --input x --memory lots
unset SOURCE_DATE_EPOCH

# --- info
expect 0 "info" "$ctl" filter info "$tmp/a.bfuse"
contains "$tmp/out" "password-sha1" "info kind"
contains "$tmp/out" "binary-fuse, 4-wise, 16-bit fingerprints" "info algorithm (4-wise by default)"
contains "$tmp/out" "keys:              2" "info keys"
expect 0 "fp8 arity 4" "$ctl" filter build --kind password-sha1 --output "$tmp/e.bfuse" \
  --input "$tmp/single.txt" --fp-bits 8 --arity 4 --generation 7 --source "test source"
expect 0 "info 2" "$ctl" filter info "$tmp/e.bfuse"
contains "$tmp/out" "4-wise, 8-bit" "info fp8"
contains "$tmp/out" "generation:        7" "info generation"
contains "$tmp/out" "test source" "info source"
expect 0 "arity 3" "$ctl" filter build --kind password-sha1 --output "$tmp/e3.bfuse" \
  --input "$tmp/single.txt" --arity 3
expect 0 "info arity 3" "$ctl" filter info "$tmp/e3.bfuse"
contains "$tmp/out" "binary-fuse, 3-wise, 16-bit fingerprints" "info arity 3"

# --- verify: intact, flipped byte, truncated, not a filter
expect 0 "verify intact" "$ctl" filter verify "$tmp/a.bfuse"
size=$(stat -c %s "$tmp/a.bfuse")
for off in 3 100 500 4096 $((size - 1)); do
  cp "$tmp/a.bfuse" "$tmp/flip"
  b=$(od -An -tu1 -j "$off" -N1 "$tmp/flip" | tr -d ' ')
  printf "$(printf '\\%03o' $(((b ^ 0x10) & 0xff)))" | dd of="$tmp/flip" bs=1 seek="$off" conv=notrunc status=none
  expect 2 "verify flipped byte $off" "$ctl" filter verify "$tmp/flip"
done
head -c $((size - 10)) "$tmp/a.bfuse" >"$tmp/trunc"
expect 2 "verify truncated" "$ctl" filter verify "$tmp/trunc"
contains "$tmp/err" "truncated" "truncation reason"
head -c 2000 /dev/zero >"$tmp/zeros"
expect 2 "verify not a filter" "$ctl" filter verify "$tmp/zeros"
contains "$tmp/err" "bad magic" "magic reason"
expect 2 "query refused file" "$ctl" filter query "$tmp/trunc" "$pw_hash"
expect 2 "info refused file" "$ctl" filter info "$tmp/trunc"

# --- info --force: what a refused file's header says, every value marked
# unverified; still exit 2. Not with --force: nothing on stdout.
cp "$tmp/e.bfuse" "$tmp/hdr"
printf 'X' | dd of="$tmp/hdr" bs=1 seek=140 conv=notrunc status=none # in the source text
expect 2 "info damaged header" "$ctl" filter info "$tmp/hdr"
[ -s "$tmp/out" ] && bad "info printed a damaged header: $(cat "$tmp/out")" || ok
expect 2 "info --force damaged header" "$ctl" filter info --force "$tmp/hdr"
contains "$tmp/err" "header checksum mismatch" "damaged header reason"
contains "$tmp/out" "UNVERIFIED: this file failed its checks" "unverified heading"
contains "$tmp/out" "header checksum mismatch" "reason in the unverified output"
contains "$tmp/out" "unverified kind:                 password-sha1 (1)" "unverified kind"
contains "$tmp/out" "unverified generation:           7" "unverified generation"
contains "$tmp/out" '"testXsource"' "unverified source, as stored"
contains "$tmp/out" "(does NOT match the header's bytes" "header checksum verdict"
grep -Eq '^(kind|generation|keys):' "$tmp/out" && bad "an unverified value without its mark" || ok
expect 2 "info --force truncated body" "$ctl" filter info "$tmp/trunc" --force
contains "$tmp/out" "truncated" "truncation reason in the unverified output"
contains "$tmp/out" "unverified keys:                 2" "unverified keys"
contains "$tmp/out" "(matches the header's bytes)" "intact header of a truncated file"
head -c 100 "$tmp/a.bfuse" >"$tmp/head100"
expect 2 "info --force short file" "$ctl" filter info --force "$tmp/head100"
contains "$tmp/out" "unverified payload size:" "fields within the 100 bytes"
contains "$tmp/out" "params and every field after it (the file holds 100 of the header's 512 bytes)" \
  "fields past the end named"
expect 2 "info --force not a filter" "$ctl" filter info --force "$tmp/zeros"
contains "$tmp/out" '"\x00\x00\x00\x00\x00\x00\x00\x00" (not a breachd filter file)' "foreign magic"
printf 'example.test\n' >"$tmp/domains.txt"
expect 0 "url filter for --force" "$ctl" filter build --kind url-sha256 --output "$tmp/u.bbf" \
  --input "$tmp/domains.txt"
usize=$(stat -c %s "$tmp/u.bbf")
head -c $((usize - 64)) "$tmp/u.bbf" >"$tmp/u-trunc.bbf"
expect 2 "info --force url filter, truncated" "$ctl" filter info --force "$tmp/u-trunc.bbf"
contains "$tmp/out" "unverified kind:                 url-sha256 (2)" "url kind, unverified"
contains "$tmp/out" "unverified algorithm:            blocked-bloom (2)" "url algorithm, unverified"
expect 0 "info --force intact" "$ctl" filter info --force "$tmp/e.bfuse"
contains "$tmp/out" "generation:        7" "intact file: the verified header"
grep -q UNVERIFIED "$tmp/out" && bad "an intact file marked unverified" || ok
expect 2 "verify takes no --force" "$ctl" filter verify --force "$tmp/e.bfuse"

# --- fixtures stay readable
for f in "$src"/data/fixtures/*.bfuse; do
  expect 0 "verify fixture $(basename "$f")" "$ctl" filter verify --no-record "$f"
done
ls "$src"/data/fixtures | grep -q '\.verified$' && bad "--no-record left a record beside the fixtures" || ok

# --- usage errors
expect 2 "bad query key" "$ctl" filter query "$tmp/a.bfuse" 1234
expect 2 "bad stdin key" sh -c "echo zz | '$ctl' filter query '$tmp/a.bfuse'"
contains "$tmp/err" "stdin:1:" "stdin key line number"
expect 2 "missing options" "$ctl" filter build --kind password-sha1
expect 2 "bad kind" "$ctl" filter build --kind email --output "$tmp/z" --input "$tmp/single.txt"
expect 2 "bad fp-bits" "$ctl" filter build --kind password-sha1 --output "$tmp/z" --input x --fp-bits 12
expect 2 "unknown command" "$ctl" frobnicate
expect 2 "unknown filter subcommand" "$ctl" filter frob
expect 0 "socket option after command" "$ctl" filter verify --socket /nonexistent "$tmp/a.bfuse"
expect 0 "help" "$ctl" --help

echo "filter-cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
