//go:build !linux

package tools

import "errors"

func exchange(a, b string) error { return errors.New("RENAME_EXCHANGE is Linux only") }
