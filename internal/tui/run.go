package tui

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"
)

// Run shows the TUI on the terminal until the owner quits or ctx ends.
func Run(ctx context.Context, o Options) error {
	if o.Dial == nil {
		return errors.New("tui: no dialer")
	}
	m := New(o)
	p := tea.NewProgram(m, tea.WithContext(ctx))
	_, err := p.Run()
	if m.client != nil {
		_ = m.client.Close()
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) {
		return fmt.Errorf("tui: %w", err)
	}
	return nil
}
