// Package sandbox confines the exec tool's commands: Landlock rules applied in a
// re-executed supervisor that also ends every process the command starts.
package sandbox

import (
	"fmt"
	"runtime"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Kind names the confinement mechanism in force.
type Kind string

const (
	// KindLandlock confines with Landlock in a re-executed supervisor.
	KindLandlock Kind = "landlock"
	// KindNone means no OS sandbox is available: exec must be off or ask
	// approval for every command, never run unconfined silently.
	KindNone Kind = "none"
)

// Minimum ABIs for each confinement Landlock offers.
const (
	// abiTCP is the first ABI that restricts TCP bind and connect.
	abiTCP = 4
	// abiUDP is the first ABI that restricts UDP bind, connect and send.
	abiUDP = 10
	// abiScoped is the first ABI that keeps a sandboxed process from
	// signalling processes outside it and from abstract unix sockets.
	abiScoped = 6
	// abiUnixPath is the first ABI that restricts connect on pathname
	// unix sockets through filesystem rules.
	abiUnixPath = 9
)

// Mode is what the kernel offers, as Detect found it.
type Mode struct {
	Kind Kind `json:"kind"`
	// ABI is the Landlock ABI version (0 when Kind is none).
	ABI int `json:"abi,omitempty"`
	// Reason says why Kind is none.
	Reason string `json:"reason,omitempty"`
}

// Detect probes the running kernel. It never fails: the absence of a
// sandbox is a Mode, not an error, so every caller has to face it.
func Detect() Mode {
	if runtime.GOOS != "linux" {
		return Mode{Kind: KindNone, Reason: "landlock needs linux"}
	}
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 1 {
		return Mode{Kind: KindNone, Reason: fmt.Sprintf("landlock unavailable: %v", err)}
	}
	if v >= abiScoped {
		// A kernel without the signal-scoping fix is downgraded, as
		// go-landlock does, so we never claim scoping we do not get.
		if errata, err := ll.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			v = abiScoped - 1
		}
	}
	return Mode{Kind: KindLandlock, ABI: v}
}

// Available reports whether commands can be confined at all.
func (m Mode) Available() bool { return m.Kind == KindLandlock }

// ConfinesTCP reports whether network-off can be enforced for TCP.
func (m Mode) ConfinesTCP() bool { return m.Available() && m.ABI >= abiTCP }

// ConfinesNetwork reports whether network-off holds for every socket family
// a command could reach the network with: the seccomp filter refuses inet,
// inet6 and packet sockets and io_uring; Landlock adds TCP from ABI 4.
func (m Mode) ConfinesNetwork() bool { return m.Available() && seccompSupported() }

// String is the one-line form doctor prints, e.g.
// "landlock-v7 (fs, tcp, udp via seccomp, scoped signals)".
func (m Mode) String() string {
	if !m.Available() {
		return "none (" + m.Reason + ")"
	}
	s := fmt.Sprintf("landlock-v%d (fs", m.ABI)
	switch {
	case m.ABI >= abiUDP:
		s += ", tcp, udp"
	case m.ABI >= abiTCP:
		s += ", tcp"
	default:
		s += ", network NOT confined by landlock"
	}
	if m.ConfinesNetwork() {
		s += ", all inet sockets via seccomp"
	} else {
		s += ", network not confined: needs approval"
	}
	if m.ABI >= abiScoped {
		s += ", scoped signals"
	}
	if m.ABI < abiUnixPath {
		s += ", unix sockets refused via seccomp"
	}
	return s + ")"
}
