#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# breachctl filter build|add|info|verify|query for url-sha256 filters as a
# user runs them: feeds of every format, the range mirror, the secret-class
# refusal (exact message, nothing written), --skip-bad, incremental add
# (generation + 1, only the affected prefix files rewritten, the old file
# kept on failure), determinism, damage detection.
# Usage: url-filter-cli.sh BREACHCTL
set -euo pipefail
ctl=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/breachd-url-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $*" >&2; fail=$((fail + 1)); }
expect() { # expect STATUS DESCRIPTION CMD...
  local want=$1 what=$2
  shift 2
  local got=0
  "$@" >"$tmp/out" 2>"$tmp/err" || got=$?
  if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, expected $want ($(cat "$tmp/err"))"; fi
}
contains() { # contains FILE TEXT DESCRIPTION
  if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in: $(cat "$1")"; fi
}
same() { # same GOT WANT DESCRIPTION
  if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1', expected '$2'"; fi
}
key() { printf '%s' "$1" | sha256sum | cut -c1-64 | tr a-f A-F; }
tree_sums() { (cd "$1" && find . -type f | sort | xargs -r sha256sum); }
tree_stat() { (cd "$1" && find . -type f -printf '%P %i %T@\n' | sort); }

# --- feeds: a URL list (CRLF, BOM, comments), a hosts file, a domain list
printf '\xEF\xBB\xBF# phishing URLs\r\nhttp://Evil.Example.com/login/index.php?id=1#top\r\n\r\nexample.org/bad/   # trailing\r\n' >"$tmp/urls.txt"
printf '# hosts\n127.0.0.1 localhost\n::1 localhost ip6-localhost\n0.0.0.0 ads.example.com tracker.example.com\n0.0.0.0 0.0.0.0\n' >"$tmp/hosts.txt"
printf 'malware.example\nb\xc3\xbccher.example\n' >"$tmp/domains.txt"
mkdir "$tmp/o"

expect 0 "build" "$ctl" filter build --kind url-sha256 --output "$tmp/o/u.bbf" \
  --ranges-dir "$tmp/ranges" --input "$tmp/urls.txt=phishing" --input "$tmp/hosts.txt=ads" \
  --input "$tmp/domains.txt" --generation 7 --source "unit feeds"
contains "$tmp/err" "$tmp/urls.txt: urls, category phishing: 2 entries" "urls summary"
contains "$tmp/err" "$tmp/hosts.txt: hosts, category ads: 2 entries from 5 lines (1 blank or comment, 4 localhost-like ignored" "hosts summary"
contains "$tmp/err" "$tmp/domains.txt: domains, category malware: 2 entries" "domains summary"
contains "$tmp/err" "6 keys" "key count"
exprs=("evil.example.com/login/index.php?id=1" "example.org/bad/" "ads.example.com/" "tracker.example.com/" "malware.example/" "xn--bcher-kva.example/")
cats=(phishing phishing ads ads malware malware)

# the mirror: one PREFIX.txt per prefix, sorted SUFFIX:category lines
for i in "${!exprs[@]}"; do
  k=$(key "${exprs[$i]}")
  f="$tmp/ranges/${k:0:5}.txt"
  if grep -qx "${k:5}:${cats[$i]}" "$f" 2>/dev/null; then ok; else bad "mirror line for ${exprs[$i]} in $f"; fi
done
same "$(ls "$tmp/ranges" | wc -l)" 7 "mirror file count (6 prefixes and empty.txt)"
same "$(stat -c %s "$tmp/ranges/empty.txt")" 0 "empty.txt is empty"
for f in "$tmp/ranges"/*.txt; do
  LC_ALL=C sort -c "$f" && ok || bad "$f not sorted"
  grep -q $'\r' "$f" && bad "$f has CR" || ok
done
same "$(ls -A "$tmp/o")" "u.bbf" "no temporary left beside the filter"

expect 0 "verify" "$ctl" filter verify "$tmp/o/u.bbf"
contains "$tmp/out" "OK (url-sha256, 6 keys, generation 7)" "verify line"
expect 0 "info" "$ctl" filter info "$tmp/o/u.bbf"
contains "$tmp/out" "blocked-bloom, 512-bit blocks" "info algorithm"
contains "$tmp/out" "url-expression-sha256 v2" "info key encoding"
contains "$tmp/out" "6 (capacity 6)" "info keys"
contains "$tmp/out" "removals need a rebuild" "info says removals need a rebuild"
contains "$tmp/out" "expected now" "info current false-positive rate"
contains "$tmp/out" "unit feeds" "info source"

# query: by key (any case), by URL, from stdin
expect 0 "query keys" "$ctl" filter query "$tmp/o/u.bbf" "$(key ads.example.com/)" \
  "$(key malware.example/ | tr A-F a-f)" "$(key good.example/)"
same "$(cat "$tmp/out")" "$(printf 'maybe\nmaybe\nno')" "query keys output"
expect 0 "query urls" "$ctl" filter query "$tmp/o/u.bbf" --url \
  "https://deep.sub.malware.example/x/y?z" "http://EVIL.example.com/login/index.php?id=1" \
  "http://evil.example.com/login/" "http://www.b%C3%BCcher.example/" "http://good.example/"
same "$(cat "$tmp/out")" "$(printf 'maybe\nmaybe\nno\nmaybe\nno')" "query urls output"
printf 'http://ads.example.com/banner.gif\r\nhttp://example.org/bad/page\n' >"$tmp/q"
expect 0 "query urls stdin" sh -c "'$ctl' filter query --url '$tmp/o/u.bbf' <'$tmp/q'"
same "$(cat "$tmp/out")" "$(printf 'maybe\nmaybe')" "query stdin output"
expect 2 "query bad key" "$ctl" filter query "$tmp/o/u.bbf" "$(key x | cut -c1-40)"
contains "$tmp/err" "not a 64-hex SHA-256" "bad key reason"
expect 2 "query bad url" "$ctl" filter query "$tmp/o/u.bbf" --url "javascript:alert(1)"

# --- secret-class data refuses the whole build: exact message, exit 2,
# no output file, nothing written to the ranges dir (new or existing)
printf 'http://ok.example/\n\n# c\njohn.doe@example.com\n' >"$tmp/secret.txt"
sums=$(tree_sums "$tmp/ranges")
for dir in "$tmp/ranges" "$tmp/ranges-new"; do
  expect 2 "secret refusal" "$ctl" filter build --kind url-sha256 --output "$tmp/o/s.bbf" \
    --ranges-dir "$dir" --input "$tmp/urls.txt" --input "$tmp/secret.txt" --skip-bad
  same "$(grep -c . "$tmp/err" || true)" 2 "secret refusal: one summary line and the error"
  contains "$tmp/err" "breachctl: $tmp/secret.txt:4: secret-class data (e-mail address) is never indexed" "secret message"
  [ ! -e "$tmp/o/s.bbf" ] && ok || bad "secret refusal left an output file"
done
[ ! -e "$tmp/ranges-new" ] && ok || bad "secret refusal created the ranges dir"
same "$(tree_sums "$tmp/ranges")" "$sums" "secret refusal left the ranges dir alone"
same "$(ls -A "$tmp/o")" $'u.bbf\nu.bbf.verified' "secret refusal: no temporary left (the record of filter verify beside the filter)"
printf 'mailto:jane@example.org\n' >"$tmp/mailto.txt"
expect 2 "mailto refusal" "$ctl" filter build --kind url-sha256 --output "$tmp/o/s.bbf" --input "$tmp/mailto.txt"
contains "$tmp/err" "$tmp/mailto.txt:1: secret-class data (e-mail address) is never indexed" "mailto message"

# --- bad lines: stop with FILE:LINE, or counted with --skip-bad
printf 'http://good.example/1\njavascript:void(0)\nhttp://*.wild.example/\nhttp://good.example/2\n' >"$tmp/bad.txt"
expect 2 "bad line" "$ctl" filter build --kind url-sha256 --output "$tmp/o/b.bbf" --input "$tmp/bad.txt"
contains "$tmp/err" "$tmp/bad.txt:2: " "bad line FILE:LINE"
[ ! -e "$tmp/o/b.bbf" ] && ok || bad "bad line left an output file"
# half the lines bad: over the default --max-bad (1% of the lines)
expect 2 "skip-bad, too many bad" "$ctl" filter build --kind url-sha256 --output "$tmp/o/b.bbf" \
  --input "$tmp/bad.txt" --skip-bad
contains "$tmp/err" "$tmp/bad.txt: 2 of 4 entry lines are bad, more than --max-bad allows (0)" "max-bad"
[ ! -e "$tmp/o/b.bbf" ] && ok || bad "too many bad lines left an output file"
expect 0 "skip-bad" "$ctl" filter build --kind url-sha256 --output "$tmp/o/b.bbf" --input "$tmp/bad.txt" \
  --skip-bad --max-bad 50%
contains "$tmp/err" "2 entries from 4 lines (0 blank or comment, 0 localhost-like ignored, 2 bad skipped)" "skip-bad counts"
contains "$tmp/err" "warning: $tmp/bad.txt:3: " "skip-bad reports the line"
contains "$tmp/err" "no --ranges-dir" "no mirror note"
expect 2 "hosts forced as urls" "$ctl" filter build --kind url-sha256 --output "$tmp/o/h.bbf" \
  --input "$tmp/hosts.txt" --format urls
contains "$tmp/err" "$tmp/hosts.txt:2: more than one field" "forced format reason"
expect 0 "hosts forced" "$ctl" filter build --kind url-sha256 --output "$tmp/o/h.bbf" \
  --input "$tmp/hosts.txt" --format hosts

# --- incremental add: generation + 1, old and new keys, only the affected
# prefix files rewritten, the mirror merged (existing categories kept)
cp "$tmp/o/u.bbf" "$tmp/u0.bbf"
before=$(tree_stat "$tmp/ranges")
printf 'http://new.example.net/payload.exe\nads.example.com\n' >"$tmp/delta.txt"
sleep 0.01
expect 0 "add" "$ctl" filter add "$tmp/o/u.bbf" --input "$tmp/delta.txt=malware" --ranges-dir "$tmp/ranges"
contains "$tmp/err" "generation 8, 1 new keys of 2 (1 already in the filter)" "add summary"
contains "$tmp/err" "1 listed under another category" "add conflict kept"
expect 0 "verify after add" "$ctl" filter verify "$tmp/o/u.bbf"
contains "$tmp/out" "OK (url-sha256, 7 keys, generation 8)" "verify after add"
expect 0 "info after add" "$ctl" filter info "$tmp/o/u.bbf"
contains "$tmp/out" "1 keys added by filter add since the full build (generation 7, 6 keys)" "info add history"
contains "$tmp/out" "OVER CAPACITY" "info over capacity"
expect 0 "query after add" "$ctl" filter query "$tmp/o/u.bbf" --url "http://new.example.net/payload.exe" \
  "http://evil.example.com/login/index.php?id=1" "http://tracker.example.com/"
same "$(cat "$tmp/out")" "$(printf 'maybe\nmaybe\nmaybe')" "old and new keys after add"
after=$(tree_stat "$tmp/ranges")
newk=$(key new.example.net/payload.exe)
changed=$(diff <(echo "$before") <(echo "$after") | grep '^>' | cut -d' ' -f2 || true)
same "$changed" "${newk:0:5}.txt" "add rewrote only the new entry's prefix file"
grep -qx "${newk:5}:malware" "$tmp/ranges/${newk:0:5}.txt" && ok || bad "new mirror line"
k=$(key ads.example.com/)
grep -qx "${k:5}:ads" "$tmp/ranges/${k:0:5}.txt" && ok || bad "existing category kept"

# a failing add keeps the old filter and mirror
cp "$tmp/o/u.bbf" "$tmp/u1.bbf"
sums=$(tree_sums "$tmp/ranges")
expect 2 "add secret" "$ctl" filter add "$tmp/o/u.bbf" --input "$tmp/secret.txt" --ranges-dir "$tmp/ranges"
cmp -s "$tmp/o/u.bbf" "$tmp/u1.bbf" && ok || bad "failed add changed the filter"
same "$(tree_sums "$tmp/ranges")" "$sums" "failed add changed the mirror"
# a ranges dir that does not belong to the filter
mkdir "$tmp/other-ranges"
expect 2 "add foreign ranges" "$ctl" filter add "$tmp/o/u.bbf" --input "$tmp/urls.txt" --ranges-dir "$tmp/other-ranges"
contains "$tmp/err" "does not belong to this filter" "foreign ranges reason"
cmp -s "$tmp/o/u.bbf" "$tmp/u1.bbf" && ok || bad "foreign ranges add changed the filter"
same "$(ls -A "$tmp/other-ranges")" "" "foreign ranges: nothing written"
expect 2 "add generation not above" "$ctl" filter add "$tmp/o/u.bbf" --input "$tmp/delta.txt" --generation 8
expect 0 "add explicit generation" "$ctl" filter add "$tmp/o/u.bbf" --input "$tmp/delta.txt" --generation 20
expect 0 "verify" "$ctl" filter verify "$tmp/o/u.bbf"
contains "$tmp/out" "generation 20" "explicit generation"
expect 2 "add to a password filter" "$ctl" filter add "$tmp/nonexistent.bfuse" --input "$tmp/delta.txt"
printf '5BAA61E4C9B93F3F0682250B6CF8331B7EE68FD8:3\n' >"$tmp/pw.txt"
"$ctl" filter build --kind password-sha1 --output "$tmp/pw.bfuse" --input "$tmp/pw.txt" 2>/dev/null
expect 2 "add to a password filter" "$ctl" filter add "$tmp/pw.bfuse" --input "$tmp/delta.txt"
contains "$tmp/err" "additions need a rebuild" "password add reason"
expect 2 "query --url on a password filter" "$ctl" filter query "$tmp/pw.bfuse" --url http://x.example/

# --- a rebuild with fewer entries removes the stale prefix files
expect 0 "rebuild smaller" "$ctl" filter build --kind url-sha256 --output "$tmp/o/u.bbf" \
  --ranges-dir "$tmp/ranges" --input "$tmp/domains.txt"
contains "$tmp/err" "stale removed" "stale summary"
same "$(ls "$tmp/ranges" | wc -l)" 3 "only the rebuilt prefixes remain (and empty.txt)"
expect 0 "info after rebuild" "$ctl" filter info "$tmp/o/u.bbf"
contains "$tmp/out" "none since the full build" "rebuild resets the add history"

# --- determinism, sizing options
export SOURCE_DATE_EPOCH=1764460800
expect 0 "det 1" "$ctl" filter build --kind url-sha256 --output "$tmp/d1" --input "$tmp/urls.txt" --input "$tmp/hosts.txt" --source s
expect 0 "det 2" "$ctl" filter build --kind url-sha256 --output "$tmp/d2" --input "$tmp/urls.txt" --input "$tmp/hosts.txt" --source s
cmp -s "$tmp/d1" "$tmp/d2" && ok || bad "builds differ"
expect 0 "capacity" "$ctl" filter build --kind url-sha256 --output "$tmp/c" --input "$tmp/urls.txt" --capacity 100000 --fpr 1e-3
expect 0 "info capacity" "$ctl" filter info "$tmp/c"
contains "$tmp/out" "2 (capacity 100000)" "capacity recorded"
contains "$tmp/out" "target 0.001" "target recorded"
contains "$tmp/out" "k=9" "k for 1e-3"
expect 2 "capacity below keys" "$ctl" filter build --kind url-sha256 --output "$tmp/c2" --input "$tmp/urls.txt" --capacity 1
expect 2 "fpr out of range" "$ctl" filter build --kind url-sha256 --output "$tmp/c2" --input "$tmp/urls.txt" --fpr 0.5
expect 2 "bad category" "$ctl" filter build --kind url-sha256 --output "$tmp/c2" --input "$tmp/urls.txt=Bad"
expect 2 "bad format" "$ctl" filter build --kind url-sha256 --output "$tmp/c2" --input "$tmp/urls.txt" --format csv
[ ! -e "$tmp/c2" ] && ok || bad "a refused build wrote its output"

# --- damage: a flipped byte in the payload, a truncation
cp "$tmp/d1" "$tmp/dmg"
printf '\x01' | dd of="$tmp/dmg" bs=1 seek=9000 conv=notrunc status=none
expect 2 "verify damaged" "$ctl" filter verify "$tmp/dmg"
contains "$tmp/err" "checksum mismatch" "damage reason"
head -c 100000 "$tmp/d1" >"$tmp/trunc"
expect 2 "verify truncated" "$ctl" filter verify "$tmp/trunc"
contains "$tmp/err" "truncated" "truncation reason"
expect 2 "query damaged" "$ctl" filter query "$tmp/dmg" "$(key x)"

# --- the host browsers visit: '\' ends the authority (WHATWG URL standard),
# an escaped '/' or '\' before the '@' is userinfo. A feed listing
# malware.test matches a URL that hides it before "\@example.com".
bs='http://malware.test\@example.com/x'
same "$("$ctl" url-canon "$bs")" "http://malware.test/@example.com/x" "url-canon: backslash ends the host"
same "$("$ctl" url-canon 'http://malware.test%5C@example.com/')" "http://example.com/" "url-canon: escaped backslash is userinfo"
"$ctl" url-expressions "$bs" >"$tmp/bs.exprs" || bad "url-expressions of $bs"
contains "$tmp/bs.exprs" "malware.test/" "url-expressions: the host browsers visit"
grep -q '^example\.com' "$tmp/bs.exprs" && bad "url-expressions: example.com is not visited" || ok
printf 'malware.test\n' >"$tmp/bs.txt"
expect 0 "build malware.test" "$ctl" filter build --kind url-sha256 --output "$tmp/bs.bbf" --input "$tmp/bs.txt" --format domains
expect 0 "query malware.test/" "$ctl" filter query "$tmp/bs.bbf" "$(key malware.test/)"
same "$(cat "$tmp/out")" "maybe" "the visited host's expression is in the filter"

echo "url-filter-cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
