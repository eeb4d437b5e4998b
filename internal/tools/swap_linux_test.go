package tools

import "golang.org/x/sys/unix"

// exchange swaps the names a and b atomically (renameat2 RENAME_EXCHANGE),
// so an attacker can flip an entry between two kinds of file with no gap.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
