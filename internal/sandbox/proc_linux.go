//go:build linux

package sandbox

import (
	"bytes"
	"os"
	"strconv"
)

// childrenOf lists the pids whose parent is pid, by scanning /proc: this
// kernel may lack /proc/PID/task/TID/children.
func childrenOf(pid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var out []int
	for _, n := range names {
		child, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if parentOf(child) == pid {
			out = append(out, child)
		}
	}
	return out
}

// parentOf reads the ppid field of /proc/PID/stat, after the command name
// (which may itself contain spaces and parentheses).
func parentOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return -1
	}
	return ppid
}
