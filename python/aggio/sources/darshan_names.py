"""The file names of a Darshan log, whatever bytes they hold.

File names on Linux are bytes, not text; PyDarshan decodes them as UTF-8
and fails on the first name that is not, which loses every module of the
log.  This reads them as PyDarshan does, through libdarshan-util, with
the bytes that are not UTF-8 written as \\xNN escapes, and puts them in
PyDarshan's cache for the log, where its module readers look first.
"""
from __future__ import annotations


def cache_names(log) -> None:
    """Fills log["name_records"] (a PyDarshan log handle) with its names."""
    from darshan.backend import cffi_backend as be
    records = be.ffi.new("struct darshan_name_record **")
    count = be.ffi.new("int *")
    be.libdutil.darshan_log_get_name_records(log["handle"], records, count)
    names = {}
    for i in range(count[0]):
        rec = records[0][i]
        names[rec.id] = be.ffi.string(rec.name).decode("utf-8", "backslashreplace")
        be.libdutil.darshan_free(rec.name)
    be.libdutil.darshan_free(records[0])
    log["name_records"] = names
