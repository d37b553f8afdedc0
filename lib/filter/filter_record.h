/* SPDX-License-Identifier: MIT */
/* Verification records (docs/filter-format.md, "Start-up: verification
 * records"): PATH.verified says that the file at PATH, as identified by its
 * inode number, size, modification and change times and header checksum,
 * was hashed whole and found intact. breachd trusts it instead of hashing
 * the body again, only while every one of those still matches and the
 * record belongs to root (or the trusted uid) with no group or world write
 * bit. Written by `breachctl filter verify` and `filter fetch`. */
#pragma once

#include <stdint.h>
#include <sys/stat.h>

#include "core/error.h"
#include "filter_file.h"

#define BR_FILTER_RECORD_SUFFIX ".verified"

/* Write PATH.verified (by rename, mode 0644) for f, opened from path with a
 * full verification (br_filter_file_open). Refused with -ESTALE when the
 * file changed since it was opened (it was hashed while it changed). */
int br_filter_record_write(const br_filter_file *f, const char *path, br_error *err);

/* Does PATH.verified vouch for the file opened from path, as st and h say?
 * 0: yes. -ENOENT: no record. -EPERM: the record's owner or mode is not
 * trusted (also_uid as in br_filter_file_check_owner). -ESTALE: the record
 * is of another state of the file (err names the field that differs).
 * -EINVAL: not a record. *verified_at (may be NULL) is when it was written. */
int br_filter_record_check(const char *path, const struct stat *st, const br_filter_header *h,
                           long also_uid, int64_t *verified_at, br_error *err);
