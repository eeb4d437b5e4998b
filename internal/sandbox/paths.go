package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// systemDirs are visible read-only (and executable). Missing ones are
// skipped by the supervisor. /proc is deliberately absent: on this kernel a
// Landlocked process could still read /proc/PID/environ of the unconfined
// raven process (provider keys), so /proc stays invisible and /dev/fd with it.
var systemDirs = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/sys",
}

// devicePaths are opened read-write; everything else in /dev is invisible.
// /dev/tty is not among them: the supervisor has no controlling terminal,
// so a command cannot push keystrokes into the owner's (TIOCSTI).
var devicePaths = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// etcSecrets are /etc entries never shown: password hashes, sudo policy,
// host keys, VPN and Wi-Fi credentials.
var etcSecrets = map[string]bool{
	"shadow": true, "shadow-": true, "gshadow": true, "gshadow-": true,
	"sudoers": true, "sudoers.d": true, "security": true, "krb5.keytab": true,
	"ssh": true, "ssl": true, "NetworkManager": true, "wireguard": true,
	"openvpn": true, "ppp": true, "ipsec.secrets": true, "ipsec.d": true,
	"credstore": true, "credstore.encrypted": true, "docker": true, "libvirt": true,
}

// systemPaths lists the read-only hierarchies: the system dirs, and /etc
// entry by entry without its secrets (Landlock grants, it cannot subtract).
// /etc/ssh and /etc/ssl are walked one level so client config and CA
// certificates stay visible while host and private keys do not.
func systemPaths() []string {
	out := append([]string{}, systemDirs...)
	out = append(out, etcEntries("/etc", etcSecrets)...)
	out = append(out, filterEntries("/etc/ssh", func(n string) bool {
		return strings.HasPrefix(n, "ssh_host_") && !strings.HasSuffix(n, ".pub")
	})...)
	out = append(out, filterEntries("/etc/ssl", func(n string) bool { return n == "private" })...)
	return out
}

func etcEntries(dir string, skip map[string]bool) []string {
	return filterEntries(dir, func(n string) bool { return skip[n] })
}

func filterEntries(dir string, skip func(string) bool) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !skip(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}
