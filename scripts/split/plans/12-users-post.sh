#!/bin/sh
# Issue 20, step ten, after plans/12-users.txt: the users' file named for them.
set -e
mv core/proc/client.go core/proc/users.go
