package tui

import (
	"hash/fnv"
	"image/color"

	"charm.land/lipgloss/v2"
)

// Styles are the colours of the UI: a theme (DefaultStyles for dark
// terminals, LightStyles for light ones; /theme switches). The renderers
// only ever use these fields. Colour is
// dropped by the terminal program for terminals without it and when
// NO_COLOR is set.
type Styles struct {
	Speakers []color.Color // speaker colours, picked by a hash of the id

	Me, System, Error, Dim, Proposal, Approved, Rejected lipgloss.Style
	StatusBar, StatusOK, StatusBad                       lipgloss.Style
	Dialog, DialogTitle, Choice, ChoiceActive            lipgloss.Style
	Prompt, Match, Code, Bold                            lipgloss.Style
}

// DefaultStyles is the dark-terminal palette.
func DefaultStyles() Styles {
	c := lipgloss.Color
	return Styles{
		Speakers:     []color.Color{c("39"), c("208"), c("170"), c("78"), c("220"), c("81"), c("203"), c("141")},
		Me:           lipgloss.NewStyle().Foreground(c("252")).Bold(true),
		System:       lipgloss.NewStyle().Foreground(c("244")),
		Error:        lipgloss.NewStyle().Foreground(c("196")),
		Dim:          lipgloss.NewStyle().Foreground(c("242")),
		Proposal:     lipgloss.NewStyle().Foreground(c("214")).Bold(true),
		Approved:     lipgloss.NewStyle().Foreground(c("78")),
		Rejected:     lipgloss.NewStyle().Foreground(c("203")),
		StatusBar:    lipgloss.NewStyle().Foreground(c("252")).Background(c("236")),
		StatusOK:     lipgloss.NewStyle().Foreground(c("78")).Background(c("236")),
		StatusBad:    lipgloss.NewStyle().Foreground(c("203")).Background(c("236")),
		Dialog:       lipgloss.NewStyle().Foreground(c("214")),
		DialogTitle:  lipgloss.NewStyle().Foreground(c("214")).Bold(true),
		Choice:       lipgloss.NewStyle().Foreground(c("250")),
		ChoiceActive: lipgloss.NewStyle().Foreground(c("0")).Background(c("214")).Bold(true),
		Prompt:       lipgloss.NewStyle().Foreground(c("214")).Bold(true),
		Match:        lipgloss.NewStyle().Foreground(c("0")).Background(c("220")),
		Code:         lipgloss.NewStyle().Foreground(c("180")),
		Bold:         lipgloss.NewStyle().Bold(true),
	}
}

// LightStyles is the palette for light terminals: darker speaker colours,
// a pale status bar.
func LightStyles() Styles {
	c := lipgloss.Color
	return Styles{
		Speakers:     []color.Color{c("25"), c("130"), c("90"), c("28"), c("94"), c("31"), c("160"), c("54")},
		Me:           lipgloss.NewStyle().Foreground(c("235")).Bold(true),
		System:       lipgloss.NewStyle().Foreground(c("242")),
		Error:        lipgloss.NewStyle().Foreground(c("160")),
		Dim:          lipgloss.NewStyle().Foreground(c("245")),
		Proposal:     lipgloss.NewStyle().Foreground(c("130")).Bold(true),
		Approved:     lipgloss.NewStyle().Foreground(c("28")),
		Rejected:     lipgloss.NewStyle().Foreground(c("160")),
		StatusBar:    lipgloss.NewStyle().Foreground(c("235")).Background(c("254")),
		StatusOK:     lipgloss.NewStyle().Foreground(c("28")).Background(c("254")),
		StatusBad:    lipgloss.NewStyle().Foreground(c("160")).Background(c("254")),
		Dialog:       lipgloss.NewStyle().Foreground(c("130")),
		DialogTitle:  lipgloss.NewStyle().Foreground(c("130")).Bold(true),
		Choice:       lipgloss.NewStyle().Foreground(c("238")),
		ChoiceActive: lipgloss.NewStyle().Foreground(c("231")).Background(c("130")).Bold(true),
		Prompt:       lipgloss.NewStyle().Foreground(c("130")).Bold(true),
		Match:        lipgloss.NewStyle().Foreground(c("0")).Background(c("229")),
		Code:         lipgloss.NewStyle().Foreground(c("94")),
		Bold:         lipgloss.NewStyle().Bold(true),
	}
}

// Themes are the palettes /theme offers, by name.
func Themes() map[string]func() Styles {
	return map[string]func() Styles{"dark": DefaultStyles, "light": LightStyles}
}

// speaker returns the style of participant id's name.
func (s *Styles) speaker(id string) lipgloss.Style {
	if len(s.Speakers) == 0 {
		return lipgloss.NewStyle()
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return lipgloss.NewStyle().Foreground(s.Speakers[h.Sum32()%uint32(len(s.Speakers))]).Bold(true)
}
