#!/usr/bin/env bash
# Device calls build from a snapshot of one commit. The device machine's copy of the repository
# can carry a stale .git (git rev-parse / git archive there name an older commit), so the
# snapshot is made here and travels in the git-ignored .gl/ folder.
#
#   here:    bash scripts/device_tree.sh pack           -> .gl/tree.tar and .gl/TREE_ID (HEAD;
#                                                          refuses a dirty tree unless ALLOW_DIRTY=1)
#   device:  bash scripts/device_tree.sh run CMD ...    syncs .gl/tree.tar into $SEAM_TREE
#            (default /tmp/seam_tree), links the carried .carry/ into it, and runs CMD there
#            (e.g. `bash scripts/gpu_suite.sh configure build test`); $OUT passes through.
# Name [".carry", ".gl"] in the device call's `carry`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cmd=${1:-}
shift || true
case "$cmd" in
  pack)
    cd "$ROOT"
    if [ -n "$(git status --porcelain --untracked-files=no)" ] && [ "${ALLOW_DIRTY:-0}" != 1 ]; then
      echo "device_tree: uncommitted changes; commit them (the snapshot is HEAD) or set ALLOW_DIRTY=1" >&2
      exit 2
    fi
    mkdir -p .gl
    git archive HEAD -o .gl/tree.tar
    git rev-parse --short HEAD > .gl/TREE_ID
    echo "device_tree: packed $(cat .gl/TREE_ID) ($(du -h .gl/tree.tar | cut -f1))"
    ;;
  run)
    [ $# -gt 0 ] || { echo "device_tree: run needs a command" >&2; exit 2; }
    [ -f "$ROOT/.gl/tree.tar" ] || { echo "device_tree: no .gl/tree.tar (pack it and carry .gl)" >&2; exit 2; }
    TREE=${SEAM_TREE:-/tmp/seam_tree}
    # The snapshot is synced into $TREE by content: unchanged files keep their old mtimes, so a
    # build folder inside the tree (build-gpu/) stays incremental on a machine that is still warm
    # (a fresh extraction would date every file at the commit and rebuild everything).
    STAGE="$TREE.stage"
    rm -rf "$STAGE"
    mkdir -p "$STAGE" "$TREE"
    tar -xf "$ROOT/.gl/tree.tar" -C "$STAGE"
    python3 - "$STAGE" "$TREE" <<'PY'
import filecmp, os, shutil, sys
stage, tree = sys.argv[1], sys.argv[2]
keep = {"build-gpu", ".carry", "gpu-out"}  # not in the snapshot, kept between calls
changed = removed = 0
for d, dirs, files in os.walk(stage):
    rel = os.path.relpath(d, stage)
    os.makedirs(os.path.join(tree, rel), exist_ok=True)
    for f in files:
        src, dst = os.path.join(d, f), os.path.join(tree, rel, f)
        if not (os.path.isfile(dst) and filecmp.cmp(src, dst, shallow=False)):
            shutil.copyfile(src, dst)  # a fresh mtime: the build sees the change
            shutil.copymode(src, dst)
            changed += 1
for d, dirs, files in os.walk(tree, topdown=True):
    rel = os.path.relpath(d, tree)
    if rel == ".":
        dirs[:] = [x for x in dirs if x not in keep]
        files = [x for x in files if x not in keep]
    for f in files:
        if not os.path.lexists(os.path.join(stage, rel, f)):
            os.remove(os.path.join(d, f))
            removed += 1
print(f"device_tree: {changed} files changed, {removed} removed since the last sync")
PY
    rm -rf "$STAGE"
    [ -d "$ROOT/.carry" ] && ln -sfn "$ROOT/.carry" "$TREE/.carry"
    echo "device_tree: running in $TREE (commit $(cat "$ROOT/.gl/TREE_ID"))"
    cd "$TREE"
    exec "$@"
    ;;
  *)
    echo "usage: bash scripts/device_tree.sh pack | run CMD ..." >&2
    exit 2
    ;;
esac
