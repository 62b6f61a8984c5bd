#!/bin/sh
# tools/kver.sh LINE: the newest installed Debian cloud kernel of a kernel
# line ("6.1", "6.12"), as its version string (6.1.0-56-cloud-amd64), or
# nothing.  One definition for the Makefile, deps.sh and module.sh.
line=$(printf '%s' "${1:?usage: kver.sh LINE}" | sed 's/\./\\./g')
ls -1v /boot 2>/dev/null | sed -n "s/^vmlinuz-\\(${line}\\.[^-+]*[-+].*-cloud-amd64\\)\$/\\1/p" | tail -n1
