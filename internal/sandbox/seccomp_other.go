//go:build !linux || !(amd64 || arm64)

package sandbox

import "errors"

func seccompSupported() bool { return false }

func installSocketFilter(network, unixByPath bool) error {
	return errors.New("sandbox: no seccomp filter for this platform")
}
