package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/auditlog"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/jobs"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

func newLogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Check, search and replay a space's audit log",
		Long: `log works on the gateway's audit log: envelope-history.jsonl and
capability-decisions.jsonl with their rotated files, in <space>/.mew/logs by
default. The format, the hash chain and what each command reads are
described in docs/audit.md.`,
	}
	cmd.AddCommand(newLogVerifyCmd(), newLogQueryCmd(), newLogWhyCmd(), newLogReplayCmd())
	return cmd
}

func newLogVerifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "verify [DIR]",
		Short: "Check that the audit log is whole: no line altered, removed or inserted",
		Long: `verify checks the hash chain of both audit logs in DIR: every rotated file
oldest first, then the current file, each line against the line before it and
the first line of each file against the end of the file before it.

DIR is the log directory, or a space directory whose log directory
(<mew dir>/logs) is checked; the default is the current directory.

When the logs are intact it prints, per log, the files and lines checked and
the hash of the last line (keep it elsewhere to detect a later removal of the
last lines), and exits 0. Otherwise it names the first line where the chain
breaks, as FILE:LINE and what happened there (altered, inserted, removed,
swapped, cut off, a file missing), and exits 1.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dirs, err := logDirsOf(dirArg(args, 0))
			if err != nil {
				return fmt.Errorf("log verify: %w", err)
			}
			// Each node's log is a chain of its own.
			var broken []error
			for _, dir := range dirs {
				if len(dirs) > 1 {
					fmt.Fprintf(cmd.OutOrStdout(), "%s:\n", dir)
				}
				rep, err := auditlog.Verify(dir, auditlog.VerifyOptions{})
				if err != nil {
					return fmt.Errorf("log verify: %w", err)
				}
				if err := printVerify(cmd.OutOrStdout(), &rep); err != nil {
					broken = append(broken, err)
				}
			}
			return errors.Join(broken...)
		},
	}
}

// dirArg returns args[i], or the current directory.
func dirArg(args []string, i int) string {
	if len(args) > i {
		return args[i]
	}
	return "."
}

// logDirsOf returns the audit log directories for dir: dir itself when it
// holds a log file, else the logs directory of the space in dir; each with
// the logs of the other gateway nodes of a `mew space up --nodes` space
// (auditlog.NodeDirs), which every mew log command reads together.
func logDirsOf(dir string) ([]string, error) {
	if auditlog.HasLogs(dir) {
		return auditlog.NodeDirs(dir), nil
	}
	mew, err := mewDirOf(dir)
	if err != nil {
		return nil, err
	}
	if logs := filepath.Join(mew, "logs"); auditlog.HasLogs(logs) {
		return auditlog.NodeDirs(logs), nil
	}
	return nil, fmt.Errorf("no audit log in %s or in the logs directory of its space", dir)
}

// printVerify prints the summary of rep and returns an error naming the first
// problem, if any.
func printVerify(w io.Writer, rep *auditlog.Report) error {
	files, lines := 0, 0
	var problems []error
	for i := range rep.Logs {
		l := &rep.Logs[i]
		files += len(l.Files)
		lines += l.Lines
		state := "intact"
		if l.Problem != nil {
			state = "intact before the break"
		}
		fmt.Fprintf(w, "%s: %s, %d lines %s", l.Name, plural(len(l.Files), "file"), l.Lines, state)
		if l.Head != "" && l.Problem == nil {
			fmt.Fprintf(w, ", last hash %s", l.Head)
		}
		fmt.Fprintln(w)
		if l.StartsAfter != "" {
			fmt.Fprintf(w, "  the oldest file continues from hash %s of a file no longer here (deleted by retention, or removed)\n", l.StartsAfter)
		}
		if l.Problem != nil {
			fmt.Fprintf(w, "  BROKEN at %s\n", l.Problem)
			problems = append(problems, errors.New(l.Problem.String()))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("log verify: the audit log was changed: %w", errors.Join(problems...))
	}
	fmt.Fprintf(w, "ok: %s, %d lines\n", plural(files, "file"), lines)
	return nil
}

// queryFlags are the flags of mew log query.
type queryFlags struct {
	participant, kind, since, until, id, correlation, text, format, events, space string
}

func newLogQueryCmd() *cobra.Command {
	var f queryFlags
	cmd := &cobra.Command{
		Use:   "query [DIR]",
		Short: "Search the audit log",
		Long: `query prints the records of the audit log in DIR (a log directory or a
space directory; default the current one) that match every flag given.

By default it prints one record per envelope: its received or rejected line,
or the first line of an envelope the gateway sent itself. --event chooses
others: delivered, capability_check, or all.

--since and --until take an RFC 3339 time or a duration before now (15m).
--format jsonl prints each record as a JSON object (compact delivered lines
with their envelope filled in); table, the default, one line each.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogQuery(cmd, dirArg(args, 0), &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.participant, "participant", "", "sender, recipient, from or to")
	fl.StringVar(&f.kind, "kind", "", `envelope kind; "mcp/*" for a prefix`)
	fl.StringVar(&f.since, "since", "", "from this time on (RFC 3339, or a duration before now)")
	fl.StringVar(&f.until, "until", "", "before this time (RFC 3339, or a duration before now)")
	fl.StringVar(&f.id, "id", "", "envelope id")
	fl.StringVar(&f.correlation, "correlation", "", "envelopes whose correlation_id or context names this id")
	fl.StringVar(&f.text, "text", "", "text in the envelope or metadata (case-insensitive)")
	fl.StringVar(&f.events, "event", "", "received,rejected,delivered,capability_check or all (default: one record per envelope)")
	fl.StringVar(&f.space, "space", "", "space id (for a log shared by several spaces)")
	fl.StringVar(&f.format, "format", "table", "table or jsonl")
	return cmd
}

// parseWhen reads a --since/--until value.
func parseWhen(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time or a duration such as 15m", flag, v)
}

func runLogQuery(cmd *cobra.Command, dir string, f *queryFlags) error {
	q := auditlog.Query{Participant: f.participant, Kind: f.kind, ID: f.id, Correlation: f.correlation, Text: f.text, Space: f.space}
	now := time.Now()
	var err error
	if q.Since, err = parseWhen("since", f.since, now); err != nil {
		return fmt.Errorf("log query: %w", err)
	}
	if q.Until, err = parseWhen("until", f.until, now); err != nil {
		return fmt.Errorf("log query: %w", err)
	}
	if f.format != "table" && f.format != "jsonl" {
		return fmt.Errorf("log query: --format %q: want table or jsonl", f.format)
	}
	originOnly := false
	switch f.events {
	case "":
		q.Events, originOnly = []string{auditlog.Received, auditlog.Rejected, auditlog.Delivered}, true
	case "all":
	default:
		for e := range strings.SplitSeq(f.events, ",") {
			switch e = strings.TrimSpace(e); e {
			case auditlog.Received, auditlog.Rejected, auditlog.Delivered, auditlog.CapabilityCheck:
				q.Events = append(q.Events, e)
			default:
				return fmt.Errorf("log query: --event %q: want received, rejected, delivered, capability_check or all", e)
			}
		}
	}
	logs, err := logDirsOf(dir)
	if err != nil {
		return fmt.Errorf("log query: %w", err)
	}
	out := cmd.OutOrStdout()
	var tw *tabwriter.Writer
	if f.format == "table" {
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tEVENT\tID\tPARTICIPANT\tKIND\tSUMMARY")
		out = tw
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	n := 0
	print := func(r *auditlog.Record) error {
		if (originOnly && r.Event == auditlog.Delivered && !r.Origin) || !q.Match(r) {
			return nil
		}
		n++
		if tw == nil {
			return enc.Encode(r)
		}
		_, err := fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", protocol.FormatTime(r.Time), r.Event,
			termtext.Line(r.ID), termtext.Line(r.Participant), termtext.Line(r.Kind()), recordSummary(r))
		return err
	}
	var skipped []auditlog.ScanStats
	for _, name := range []string{auditlog.EnvelopeHistory, auditlog.CapabilityDecisions} {
		if name == auditlog.EnvelopeHistory && len(q.Events) == 1 && q.Events[0] == auditlog.CapabilityCheck {
			continue
		}
		if name == auditlog.CapabilityDecisions && len(q.Events) > 0 && !slices.Contains(q.Events, auditlog.CapabilityCheck) {
			continue
		}
		st, err := auditlog.ScanDirs(cmd.Context(), logs, name, auditlog.ReadOptions{}, print)
		if err != nil {
			return fmt.Errorf("log query: %w", err)
		}
		skipped = append(skipped, st)
	}
	if tw != nil {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	reportSkipped(cmd.ErrOrStderr(), skipped...)
	if n == 0 {
		fmt.Fprintln(cmd.ErrOrStderr(), "no record matches")
	}
	return nil
}

// reportSkipped tells on stderr of lines that were not records.
func reportSkipped(w io.Writer, stats ...auditlog.ScanStats) {
	for _, st := range stats {
		if st.Skipped == 0 {
			continue
		}
		fmt.Fprintf(w, "skipped %s that are not audit records", plural(st.Skipped, "line"))
		if len(st.Problems) > 0 {
			p := st.Problems[0]
			fmt.Fprintf(w, " (first: %s)", termtext.Line(p.String()))
		}
		fmt.Fprintln(w, "; mew log verify tells whether the log was changed")
	}
}

// recordSummary says what a record is about, in one line.
func recordSummary(r *auditlog.Record) string {
	if r.Event == auditlog.CapabilityCheck {
		s := r.Result
		if len(r.MatchedCapability) > 0 {
			s += " by " + string(r.MatchedCapability) + " (" + r.MatchedSource + ")"
		}
		if src := r.Meta("source"); src != "" && src != "websocket" && src != "http_api" {
			s += " [" + src + "]"
		}
		return termtext.Line(s)
	}
	e := r.Decoded()
	if e == nil {
		return "(no envelope)"
	}
	s := auditlog.Describe(e)
	if reason := r.Meta("reason"); reason != "" {
		s = "(" + termtext.Line(reason) + ") " + s
	}
	return s
}

func newLogWhyCmd() *cobra.Command {
	var format, space string
	cmd := &cobra.Command{
		Use:   "why ENVELOPE-ID [DIR]",
		Short: "Explain an envelope: what admitted it and what led to it",
		Long: `why prints the lineage of an envelope from the audit log in DIR (a log
directory or a space directory; default the current one) as an indented
tree: the capability pattern that admitted it (or why it was refused), the
grant that pattern came from (who granted it, when, whether it was still in
force), the proposal it fulfilled and who approved it, the request it
answers, the reasoning and question it came from, and what followed it.

--format json prints the same tree as JSON.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "tree" && format != "json" {
				return fmt.Errorf("log why: --format %q: want tree or json", format)
			}
			logs, err := logDirsOf(dirArg(args, 1))
			if err != nil {
				return fmt.Errorf("log why: %w", err)
			}
			ix, err := auditlog.BuildIndexDirs(cmd.Context(), logs, auditlog.IndexOptions{Space: space})
			if err != nil {
				return fmt.Errorf("log why: %w", err)
			}
			reportSkipped(cmd.ErrOrStderr(), ix.Envelopes, ix.Decisions)
			n, err := ix.Lineage(args[0])
			if err != nil {
				return fmt.Errorf("log why: %w", err)
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(n)
			}
			return n.WriteTree(cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&format, "format", "tree", "tree or json")
	cmd.Flags().StringVar(&space, "space", "", "space id (for a log shared by several spaces)")
	return cmd
}

// replayFlags are the flags of mew log replay.
type replayFlags struct {
	into, space, speed string
	tokens             []string
	participants       []string
}

func newLogReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay [DIR]",
		Short: "Print a space's history as a transcript, or re-send it into a space",
		Long: `replay prints the history in the audit log in DIR (a log directory or a
space directory; default the current one) as a readable transcript: who said
what to whom, reasoning, tool calls and their results, refusals.

With --into ws://HOST:PORT it re-sends the envelopes that the participants
named by --participants sent (as recorded: kind, to, correlation, context,
payload and id) into the space --space at that gateway, each participant
joining with its --token NAME=TOKEN (a bare TOKEN when there is one
participant). --speed recorded (the default) keeps the recorded pauses;
--speed N replays N times faster; --speed 0 sends without pause.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			logs, err := logDirsOf(dirArg(args, 0))
			if err != nil {
				return fmt.Errorf("log replay: %w", err)
			}
			if f.into == "" {
				return runTranscript(cmd, logs, &f)
			}
			return runReplayInto(cmd, logs, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.into, "into", "", "gateway URL (ws:// or wss://) to re-send the envelopes into")
	fl.StringVar(&f.space, "space", "", "the space to read (a log of several spaces) and, with --into, the space to join")
	fl.StringVar(&f.speed, "speed", "recorded", "recorded, or how many times faster (0: no pauses)")
	fl.StringArrayVar(&f.tokens, "token", nil, "NAME=TOKEN of a participant to send as (repeatable)")
	fl.StringSliceVar(&f.participants, "participants", nil, "the participants whose envelopes are shown or re-sent (default: all shown)")
	return cmd
}

// transcriptHidden are kinds a transcript leaves out: bookkeeping a person
// need not read.
var transcriptHidden = map[string]bool{
	protocol.KindSystemWelcome: true, protocol.KindSystemHeartbeat: true, protocol.KindChatAcknowledge: true,
	protocol.KindParticipantStatus: true, protocol.KindStreamOpen: true, protocol.KindStreamRequest: true,
	protocol.KindStreamClose: true, protocol.KindFloorRespondingTo: true, protocol.KindSystemJoin: true,
}

// runTranscript prints the log as a transcript.
func runTranscript(cmd *cobra.Command, logs []string, f *replayFlags) error {
	out := cmd.OutOrStdout()
	st, err := auditlog.ScanDirs(cmd.Context(), logs, auditlog.EnvelopeHistory, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
		if (r.Event == auditlog.Delivered && !r.Origin) || (f.space != "" && r.Space != f.space) {
			return nil
		}
		e := r.Decoded()
		if e == nil || transcriptHidden[e.Kind] {
			return nil
		}
		if len(f.participants) > 0 && !slices.Contains(f.participants, e.From) && !slices.Contains(f.participants, r.Participant) {
			return nil
		}
		_, err := fmt.Fprintln(out, transcriptLine(r, e))
		return err
	})
	if err != nil {
		return fmt.Errorf("log replay: %w", err)
	}
	reportSkipped(cmd.ErrOrStderr(), st)
	return nil
}

// transcriptLine is one envelope of a transcript.
func transcriptLine(r *auditlog.Record, e *protocol.Envelope) string {
	at := r.Time.UTC().Format("15:04:05.000")
	from := termtext.Line(e.From)
	to := ""
	if len(e.To) > 0 {
		to = " → " + termtext.Line(strings.Join(e.To, ","))
	}
	text := auditlog.Describe(e)
	switch {
	case r.Event == auditlog.Rejected:
		return fmt.Sprintf("%s  ✗ %s%s %s refused (%s): %s", at, from, to, termtext.Line(e.Kind), termtext.Line(r.Meta("reason")), text)
	case e.Kind == protocol.KindChat:
		return fmt.Sprintf("%s  %s%s: %s", at, from, to, text)
	case e.Kind == protocol.KindSystemPresence:
		return fmt.Sprintf("%s  * %s", at, text)
	case e.Kind == protocol.KindSystemError:
		return fmt.Sprintf("%s  ! to %s: %s", at, termtext.Line(strings.Join(e.To, ",")), text)
	case strings.HasPrefix(e.Kind, "reasoning/"):
		return fmt.Sprintf("%s    (%s %s: %s)", at, from, strings.TrimPrefix(e.Kind, "reasoning/"), text)
	}
	return fmt.Sprintf("%s  %s%s [%s] %s", at, from, to, termtext.Line(e.Kind), text)
}

// replaySender is one participant re-sending its envelopes.
type replaySender struct {
	c    *client.Client
	last string // id of the last envelope sent
	seen chan string
}

// runReplayInto re-sends the chosen participants' envelopes into a space.
func runReplayInto(cmd *cobra.Command, logs []string, f *replayFlags) error {
	if len(f.participants) == 0 {
		return errors.New("log replay: --into needs --participants: whose envelopes to re-send")
	}
	speed, err := parseSpeed(f.speed)
	if err != nil {
		return fmt.Errorf("log replay: %w", err)
	}
	tokens, err := replayTokens(f.tokens, f.participants)
	if err != nil {
		return fmt.Errorf("log replay: %w", err)
	}
	// Read what to send first, so that a bad log sends nothing.
	type item struct {
		at  time.Time
		env *protocol.Envelope
	}
	var items []item
	st, err := auditlog.ScanDirs(cmd.Context(), logs, auditlog.EnvelopeHistory, auditlog.ReadOptions{}, func(r *auditlog.Record) error {
		if r.Event != auditlog.Received || (f.space != "" && r.Space != f.space) {
			return nil
		}
		e := r.Decoded()
		if e == nil || !slices.Contains(f.participants, e.From) || strings.HasPrefix(e.Kind, "system/") {
			return nil
		}
		items = append(items, item{r.Time, e})
		return nil
	})
	if err != nil {
		return fmt.Errorf("log replay: %w", err)
	}
	reportSkipped(cmd.ErrOrStderr(), st)
	if len(items) == 0 {
		return fmt.Errorf("log replay: %s sent nothing the log recorded", strings.Join(f.participants, ", "))
	}
	ctx := cmd.Context()
	senders := map[string]*replaySender{}
	defer func() {
		for _, s := range senders {
			_ = s.c.Close()
		}
	}()
	for _, p := range f.participants {
		c, err := client.New(client.Options{Gateway: f.into, Space: f.space, Token: tokens[p]})
		if err != nil {
			return fmt.Errorf("log replay: %s: %w", p, err)
		}
		s := &replaySender{c: c, seen: make(chan string, 64)}
		senders[p] = s
		c.OnMessage(func(e *protocol.Envelope) {
			if e.From == c.ID() {
				select {
				case s.seen <- e.ID:
				default:
				}
			}
		})
		if err := c.Connect(ctx); err != nil {
			return fmt.Errorf("log replay: %s joins: %w", p, err)
		}
	}
	out := cmd.OutOrStdout()
	for i, it := range items {
		if i > 0 && speed > 0 {
			if !jobs.Sleep(ctx, time.Duration(float64(it.at.Sub(items[i-1].at))/speed)) {
				return ctx.Err()
			}
		}
		s := senders[it.env.From]
		env := *it.env
		env.From, env.TS, env.Protocol = "", "", ""
		if err := s.c.Send(ctx, &env); err != nil {
			return fmt.Errorf("log replay: %s sends %s: %w", it.env.From, it.env.ID, err)
		}
		s.last = env.ID
		fmt.Fprintf(out, "sent %s %s as %s\n", termtext.Line(env.Kind), termtext.Line(env.ID), termtext.Line(s.c.ID()))
		// Connections race each other: before another participant
		// speaks, this one's envelope must have been routed, so the
		// fresh space sees the recorded order.
		if i+1 < len(items) && items[i+1].env.From != it.env.From {
			if err := awaitEcho(ctx, s, echoWait); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %v\n", termtext.Line(it.env.From), err)
			}
		}
	}
	// The gateway echoes every envelope to its sender: once each sender's
	// last one is back, everything it sent has been routed.
	for p, s := range senders {
		if s.last == "" {
			continue
		}
		if err := awaitEcho(ctx, s, echoWait); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %v\n", termtext.Line(p), err)
		}
	}
	fmt.Fprintf(out, "replayed %s into %s\n", plural(len(items), "envelope"), f.into)
	return nil
}

// echoWait is how long replay waits for the gateway to route an envelope
// before the next participant speaks. Some envelopes never come back to
// their sender (a capability/grant goes to its recipient): then replay
// goes on after this wait.
const echoWait = 2 * time.Second

func awaitEcho(ctx context.Context, s *replaySender, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		select {
		case id := <-s.seen:
			if id == s.last {
				return nil
			}
		case <-t.C:
			return fmt.Errorf("the gateway did not echo %s within %s (refused, or not relayed to its sender)", termtext.Line(s.last), d)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// parseSpeed reads --speed: "recorded" is 1; 0 means no pauses.
func parseSpeed(v string) (float64, error) {
	if v == "recorded" || v == "" {
		return 1, nil
	}
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || s < 0 || s > 1e6 || s != s {
		return 0, fmt.Errorf("--speed %q: want recorded or a factor from 0 to 1000000", v)
	}
	return s, nil
}

// replayTokens maps each participant to its token from --token NAME=TOKEN
// values; a bare TOKEN serves a single participant.
func replayTokens(values, participants []string) (map[string]string, error) {
	tokens := map[string]string{}
	for _, v := range values {
		name, tok, ok := strings.Cut(v, "=")
		if !ok || !slices.Contains(participants, name) {
			// A bare token (which may hold '=' itself) serves the one
			// participant. The value is never echoed: it holds a token.
			if len(participants) != 1 || len(values) != 1 {
				return nil, errors.New("--token: a value names none of --participants: give NAME=TOKEN for each")
			}
			name, tok = participants[0], v
		}
		if tok == "" {
			return nil, fmt.Errorf("--token: empty token for %s", termtext.Line(name))
		}
		tokens[name] = tok
	}
	for _, p := range participants {
		if tokens[p] == "" {
			return nil, fmt.Errorf("--token: no token for %s", termtext.Line(p))
		}
	}
	return tokens, nil
}
