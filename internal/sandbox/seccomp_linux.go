//go:build linux && (amd64 || arm64)

package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The filter closes what Landlock leaves open on the network when it is
// off: UDP before ABI 10, raw and packet sockets (root has CAP_NET_RAW), and
// io_uring, whose socket opcode would bypass a socket(2) filter.
func seccompSupported() bool { return true }

// seccomp_data offsets.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits of args[0] on little-endian
)

func bpfStmt(code uint16, k uint32) unix.SockFilter {
	return unix.SockFilter{Code: code, K: k}
}

func bpfJump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// socketFilter refuses creating sockets of the families fams with EACCES,
// refuses io_uring, and refuses any other syscall ABI (x32, i386 through
// int 0x80, where socketcall would slip past the number check).
func socketFilter(fams []uint32) []unix.SockFilter {
	const (
		ld     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		refuse = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		nosys  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	f := []unix.SockFilter{
		bpfStmt(ld, offArch),
		bpfJump(jeq, auditArch, 1, 0),
		bpfStmt(ret, refuse),
		bpfStmt(ld, offNr),
	}
	if x32Bit != 0 {
		f = append(f, bpfJump(jge, x32Bit, 0, 1), bpfStmt(ret, refuse))
	}
	f = append(f,
		bpfJump(jeq, unix.SYS_IO_URING_SETUP, 0, 1),
		bpfStmt(ret, nosys),
		bpfJump(jeq, unix.SYS_SOCKET, 1, 0),
		bpfStmt(ret, unix.SECCOMP_RET_ALLOW),
		bpfStmt(ld, offArg0),
	)
	for i, fam := range fams {
		// Jump to the final deny past the remaining checks and the allow.
		f = append(f, bpfJump(jeq, fam, uint8(len(fams)-i), 0))
	}
	f = append(f,
		bpfStmt(ret, unix.SECCOMP_RET_ALLOW),
		bpfStmt(ret, refuse),
	)
	return f
}

// installSocketFilter applies the filter to the calling thread, which must
// be locked and already have no_new_privs set. Inet sockets are refused
// with the network off; unix sockets where Landlock cannot confine them by
// path (ABI < 9), or a command could reach the gateway's control socket or
// a docker socket outside the sandbox.
func installSocketFilter(network, unixByPath bool) error {
	var fams []uint32
	if !network {
		fams = append(fams, unix.AF_INET, unix.AF_INET6, unix.AF_PACKET)
	}
	if !unixByPath {
		fams = append(fams, unix.AF_UNIX)
	}
	if len(fams) == 0 {
		return nil
	}
	f := socketFilter(fams)
	prog := unix.SockFprog{Len: uint16(len(f)), Filter: &f[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("sandbox: seccomp socket filter: %w", err)
	}
	return nil
}
