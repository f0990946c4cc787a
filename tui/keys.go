package tui

import "charm.land/bubbles/v2/key"

// KeyMap holds the UI's global key bindings: those that work whether the
// input or the approval dialog has the keys. The input's editing keys and
// the dialog's choices are fixed; a later session makes those rebindable
// too and draws /help from the bindings' help texts.
type KeyMap struct {
	Quit, PageUp, PageDown, LineUp, LineDown, Submit, Board key.Binding
}

// DefaultKeyMap are the bindings docs/tui.md lists.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Quit:     key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("Ctrl+C", "quit")),
		PageUp:   key.NewBinding(key.WithKeys("pgup"), key.WithHelp("PgUp", "scroll back a page")),
		PageDown: key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("PgDn", "scroll on a page")),
		LineUp:   key.NewBinding(key.WithKeys("shift+up"), key.WithHelp("Shift+↑", "scroll back a line")),
		LineDown: key.NewBinding(key.WithKeys("shift+down"), key.WithHelp("Shift+↓", "scroll on a line")),
		Submit:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("Enter", "send the line")),
		Board:    key.NewBinding(key.WithKeys("f2"), key.WithHelp("F2", "show or hide the side board")),
	}
}
