package agent

import (
	"fmt"
	"os"
	"strings"

	"github.com/raven-agent/raven/internal/memory"
)

// searchToolName is the tool that reaches what the prompt budget leaves
// out; the prompt names it only when it is registered.
const searchToolName = "memory_search"

// budgetedMemory reads MEMORY.md's head and HISTORY.md's tail within their
// prompt budgets (MemoryBytes, HistoryTailBytes). When a file is longer,
// the prompt says so and where the rest is, so the model does not take
// the part it sees for all there is.
func (a *Agent) budgetedMemory() (mem, hist string) {
	where := "read the file from the workspace"
	if _, ok := a.o.Tools.Get(searchToolName); ok {
		where = "use " + searchToolName + " to find the rest"
	}
	mem, err := memory.ReadBounded(a.o.MemoryPath, int64(a.o.Config.MemoryBytes))
	if err != nil {
		a.o.Logger.Warn("MEMORY.md unreadable; continuing without it", "err", err)
	}
	if size := fileSize(a.o.MemoryPath); size > int64(len(mem)) {
		if i := strings.LastIndexByte(mem, '\n'); i > 0 {
			mem = mem[:i+1]
		}
		mem += fmt.Sprintf("\n[MEMORY.md is %d bytes; only its first %d are shown. %s.]", size, len(mem), capitalize(where))
	}
	hist, err = memory.ReadTail(a.o.HistoryPath, a.o.Config.HistoryTailBytes)
	if err != nil {
		a.o.Logger.Warn("HISTORY.md unreadable; continuing without it", "err", err)
	}
	if size := fileSize(a.o.HistoryPath); hist != "" && size > int64(len(hist)) {
		hist = fmt.Sprintf("[Only the last %d of HISTORY.md's %d bytes are shown; for anything older, %s.]\n", len(hist), size, where) + hist
	}
	return mem, hist
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
