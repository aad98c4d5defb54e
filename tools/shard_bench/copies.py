"""copies.py SOURCE OUT COPIES: OUT holds SOURCE's files COPIES times over, as links named
KKKK-NAME, made afresh (one process: a shell loop's two commands a link take minutes for 25,600 of them)."""
import os, shutil, sys

source, out, copies = sys.argv[1], sys.argv[2], int(sys.argv[3])
# Made afresh: a machine kept from an earlier call may hold another number of copies.
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
names = sorted(os.listdir(source))
for k in range(copies):
    for name in names:
        os.symlink(os.path.realpath(os.path.join(source, name)), os.path.join(out, f"{k:04d}-{name}"))
