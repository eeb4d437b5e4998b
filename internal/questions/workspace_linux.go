package questions

import "golang.org/x/sys/unix"

// birthTime reads the directory's birth time with statx(STATX_BTIME). It
// returns 0 when the filesystem does not report one, or when the inode
// statx saw is not the one just stat'ed (the path was swapped in between).
func birthTime(path string, ino uint64) int64 {
	var sx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME|unix.STATX_INO, &sx); err != nil {
		return 0
	}
	if sx.Mask&unix.STATX_BTIME == 0 || sx.Ino != ino {
		return 0
	}
	ns := sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
	if ns == 0 {
		return 0
	}
	return ns
}
