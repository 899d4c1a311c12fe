/*
 * file_name.h - file names as MPI-IO programs give them.
 */
#ifndef AGGIO_FILE_NAME_H
#define AGGIO_FILE_NAME_H

/* ROMIO lets a file name name its file system: "ufs:/scratch/a",
 * "lustre:/scratch/a" (ad_fstype.c), and programs and libraries written
 * for MPICH pass such names on (PnetCDF does).  aggio finds the file
 * system itself (statfs), so the prefix only has to go: the name after a
 * known prefix, or the name itself.  A name with another "word:" in front
 * is an ordinary file name and stays whole. */
const char *aggio__file_name_unprefixed(const char *name);

#endif
