#!/usr/bin/env bash
# Reproduces: no paper figure: a tool of the Calico paper, Figure 5 runs on a RAM disk (the I/O path
# without the device's latency).
#
# A block device in RAM, for measuring I/O paths without the disk's latency: an ext4 file
# system on a loop device whose backing file lives in tmpfs. O_DIRECT reads on it reach the
# loop device (a kernel worker copies from the tmpfs file), so every read is a real block I/O
# that costs CPU but no device wait. No kernel module is needed (brd and null_blk are often
# absent in VMs); needs root, losetup and mkfs.ext4.
#
# Usage: bench/experiments/ram_disk.sh up MB DIR    create a MB-megabyte RAM disk, mounted at DIR
#        bench/experiments/ram_disk.sh down DIR     unmount DIR, detach its loop device, free the RAM
set -euo pipefail
usage() { sed -n 2,9p "$0" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1
backing_dir=/dev/shm/calico-ram-disk
case "$cmd" in
  up)
    [ $# -eq 3 ] || usage
    mb=$2 dir=$3
    [[ "$mb" =~ ^[0-9]+$ ]] && (( mb >= 64 )) || { echo "ram_disk: MB must be a whole number >= 64, got '$mb'" >&2; exit 2; }
    [ "$(id -u)" -eq 0 ] || { echo "ram_disk: needs root (losetup, mount)" >&2; exit 2; }
    if mountpoint -q "$dir"; then echo "ram_disk: $dir is already a mount point" >&2; exit 2; fi
    # Mounting over a directory hides what it holds: only an empty or new one is taken.
    if [ -e "$dir" ] && { [ ! -d "$dir" ] || [ -n "$(ls -A "$dir")" ]; }; then
      echo "ram_disk: $dir exists and is not an empty directory" >&2; exit 2
    fi
    mkdir -p "$dir" "$backing_dir"
    img="$backing_dir/$(echo "$dir" | tr / _).img"
    dev=""
    # A failure after this point gives back what was made: no loop device or RAM is left.
    trap '[ -n "$dev" ] && losetup -d "$dev" 2>/dev/null; rm -f "$img"' ERR
    truncate -s "${mb}M" "$img"
    dev=$(losetup --find --show "$img")
    mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
    mount "$dev" "$dir"
    trap - ERR
    echo "ram_disk: $dir on $dev ($mb MB, backed by $img)"
    ;;
  down)
    [ $# -eq 2 ] || usage
    dir=$2
    mountpoint -q "$dir" || { echo "ram_disk: $dir is not mounted" >&2; exit 2; }
    dev=$(findmnt -no SOURCE -T "$dir")
    img=$(losetup -nO BACK-FILE "$dev")
    case "$img" in "$backing_dir"/*) ;; *) echo "ram_disk: $dir is not a RAM disk of this script ($dev on $img)" >&2; exit 2 ;; esac
    umount "$dir"
    losetup -d "$dev"
    rm -f "$img"
    echo "ram_disk: $dir removed"
    ;;
  *) usage ;;
esac
