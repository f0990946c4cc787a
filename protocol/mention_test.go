package protocol

import "testing"

func TestMentions(t *testing.T) {
	for _, c := range []struct {
		text, name string
		want       bool
	}{
		{"@calc add 2 and 3", "calc", true},
		{"ask @calc.", "calc", true},
		{"ask @calc, then", "calc", true},
		{"@calc-", "calc", true},
		{"@calculator", "calc", false},
		{"@calc-2 and @calc", "calc", true},
		{"calc", "calc", false},
		{"@", "", false},
	} {
		if got := Mentions(c.text, c.name); got != c.want {
			t.Errorf("Mentions(%q, %q) = %v", c.text, c.name, got)
		}
	}
}
