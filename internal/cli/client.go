package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

// maxInputLine bounds one line typed or read from --fifo-in.
const maxInputLine = 1 << 20

func newClientCmd(opts Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Join a space from the terminal or a script",
		Args:  cobra.NoArgs,
	}
	var o lineClientOptions
	var fifoIn, fifoOut, outputFile string
	connect := &cobra.Command{
		Use:   "connect",
		Short: "Connect to a space: type to chat, or pipe JSON envelopes in and out",
		Long: `Connect to a space as the participant the token names.

On a terminal (the default), what others send is shown readably; plain text you
type is sent as a chat, a JSON object as an envelope; /approve N and /reject N
answer the numbered proposals; /help lists the commands.

For scripts, --fifo-in FILE reads one JSON envelope a line (a FIFO or a file that
grows, as tail -F would), and --output-file or --fifo-out FILE receives every
envelope seen as one compact JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			getenv := opts.getenv()
			if o.Token == "" {
				o.Token = getenv(envToken)
			}
			if o.Gateway == "" {
				o.Gateway = getenv(envGateway)
			}
			if o.Space == "" {
				o.Space = getenv(envSpace)
			}
			if o.Gateway == "" || o.Space == "" || o.Token == "" {
				return errors.New("client connect: -g/--gateway, -s/--space and -t/--token (or MEW_GATEWAY, MEW_SPACE, MEW_TOKEN) are required")
			}
			if outputFile != "" && fifoOut != "" {
				return errors.New("client connect: --output-file and --fifo-out cannot be combined")
			}
			o.JSONIn, o.JSONOut = fifoIn, firstNonEmpty(outputFile, fifoOut)
			return runLineClient(cmd.Context(), cmd, o)
		},
	}
	fl := connect.Flags()
	fl.StringVarP(&o.Gateway, "gateway", "g", "", "gateway URL, such as ws://localhost:8080 (or MEW_GATEWAY)")
	fl.StringVarP(&o.Space, "space", "s", "", "space id (or MEW_SPACE)")
	fl.StringVarP(&o.Token, "token", "t", "", "the participant's token (or MEW_TOKEN)")
	fl.StringVarP(&o.ID, "participant-id", "p", "", "the id to join as; another id than the token's participant is a runtime alias")
	fl.StringVar(&fifoIn, "fifo-in", "", "read JSON envelopes, one a line, from this FIFO or file instead of the terminal")
	fl.StringVar(&fifoOut, "fifo-out", "", "write every envelope seen, one compact JSON line each, to this FIFO")
	fl.StringVar(&outputFile, "output-file", "", "append every envelope seen, one compact JSON line each, to this file")
	cmd.AddCommand(connect)
	return cmd
}

// firstNonEmpty returns the first non-empty string.
func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// lineClientOptions configures the line client.
type lineClientOptions struct {
	Gateway, Space, Token, ID string
	// JSONIn and JSONOut switch to script mode: envelopes as JSON lines.
	JSONIn, JSONOut string
	// Config, when known, gives the default recipients of chats; Self is
	// the participant's id in it.
	Config *space.Config
	Self   string
}

// lineClient is a running line client.
type lineClient struct {
	p      *participant.Participant
	out    io.Writer
	errOut io.Writer // problems with the input: stderr in script mode
	cfg    *space.Config

	mu        sync.Mutex
	proposals map[int]*participant.Proposal // by number, from 1; the latest maxNumbered
	numbers   map[string]int                // proposal id → number
	order     []int                         // numbers, oldest first
	next      int                           // the last number given
	quiet     []string                      // ids of listing requests, whose answers are not shown

	fatal chan error // the connection ended for good; one slot
}

// maxNumbered bounds the proposals the line client keeps numbered.
const maxNumbered = 1024

// indent starts the continuation lines of a peer's text: no line of
// theirs can start at the margin and pose as another speaker's.
const indent = "    "

// maxQuiet bounds the listing requests remembered.
const maxQuiet = 256

// listing reports whether an MCP method is bookkeeping (discovery, set-up,
// notifications) rather than something a person asked for.
func listing(method string) bool {
	return strings.HasSuffix(method, "/list") || method == "initialize" || method == "ping" || strings.HasPrefix(method, "notifications/")
}

// hush remembers a listing request so that its answer is not shown.
func (lc *lineClient) hush(id string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.quiet = append(lc.quiet, id)
	if len(lc.quiet) > maxQuiet {
		lc.quiet = lc.quiet[len(lc.quiet)-maxQuiet:]
	}
}

// hushed reports whether env answers a listing request.
func (lc *lineClient) hushed(env *protocol.Envelope) bool {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, id := range lc.quiet {
		if env.CorrelatesWith(id) {
			return true
		}
	}
	return false
}

// runLineClient connects and runs until the input ends, /quit, or ctx ends.
func runLineClient(ctx context.Context, cmd *cobra.Command, o lineClientOptions) error {
	p, err := participant.New(participant.Options{Client: client.Options{
		Gateway: o.Gateway, Space: o.Space, Token: o.Token, ParticipantID: o.ID, Reconnect: true,
	}})
	if err != nil {
		return err
	}
	defer p.Close()
	lc := &lineClient{
		p: p, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), cfg: o.Config,
		proposals: map[int]*participant.Proposal{}, numbers: map[string]int{}, fatal: make(chan error, 1),
	}
	p.Client().OnDisconnected(lc.onDisconnected)
	p.Client().OnError(func(err error) {
		if errors.Is(err, client.ErrReconnectFailed) {
			lc.stop(fmt.Errorf("disconnected: %w", err))
		}
	})
	var jsonOut io.WriteCloser
	if o.JSONOut != "" {
		// A FIFO blocks until its reader opens it: do it before connecting.
		f, err := os.OpenFile(o.JSONOut, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("client connect: %w", err)
		}
		jsonOut = f
		defer f.Close()
	}
	var outMu sync.Mutex
	p.Client().OnMessage(func(env *protocol.Envelope) {
		if jsonOut != nil {
			line, err := json.Marshal(env)
			if err == nil {
				outMu.Lock()
				_, _ = jsonOut.Write(append(line, '\n'))
				outMu.Unlock()
			}
			return
		}
		lc.show(env)
	})
	if jsonOut == nil {
		p.OnProposal(lc.propose)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = p.Connect(cctx)
	cancel()
	if err != nil {
		return err
	}
	in := cmd.InOrStdin()
	if o.JSONIn != "" {
		f, err := os.Open(o.JSONIn)
		if err != nil {
			return fmt.Errorf("client connect: %w", err)
		}
		defer f.Close()
		return lc.readJSON(ctx, f)
	}
	if jsonOut != nil {
		select { // output only
		case <-ctx.Done():
			return nil
		case err := <-lc.fatal:
			return err
		}
	}
	lc.errOut = lc.out // on a terminal, problems are part of the conversation
	lc.printf("connected to %s as %s; type a message, /help for commands", o.Space, p.ID())
	return lc.readLines(ctx, in)
}

// onDisconnected ends the client when the connection ended for good: the
// client does not reconnect then, and a line client left running without a
// connection would only mislead.
func (lc *lineClient) onDisconnected(err error) {
	var refused *client.RefusedError
	switch {
	case errors.Is(err, client.ErrReplaced):
		lc.stop(errors.New("disconnected: another connection with this token replaced this one"))
	case errors.Is(err, client.ErrKicked):
		lc.stop(errors.New("disconnected: kicked out of the space"))
	case errors.As(err, &refused):
		lc.stop(fmt.Errorf("disconnected: the gateway refused the token: %s", termtext.Line(refused.Error())))
	}
}

// stop ends the client with err, the first reason given.
func (lc *lineClient) stop(err error) {
	select {
	case lc.fatal <- err:
	default:
	}
}

// lines delivers the lines of r until it ends; the reading goroutine ends
// with r (a blocked terminal read ends when the process does).
func lines(r io.Reader) (<-chan string, <-chan error) {
	ch := make(chan string)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), maxInputLine)
		for sc.Scan() {
			ch <- sc.Text()
		}
		errc <- sc.Err()
	}()
	return ch, errc
}

// readJSON sends each JSON line of r as an envelope, following r as it
// grows when it is a regular file.
func (lc *lineClient) readJSON(ctx context.Context, r *os.File) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var pending []byte
	for {
		chunk, err := br.ReadSlice('\n')
		pending = append(pending, chunk...)
		if len(pending) > maxInputLine {
			return fmt.Errorf("client connect: an input line is longer than %d bytes", maxInputLine)
		}
		if err == nil {
			lc.sendJSON(ctx, strings.TrimSpace(string(pending)))
			pending = pending[:0]
			continue
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("client connect: %w", err)
		}
		if errors.Is(err, io.EOF) {
			select { // at the end for now: wait for more (tail -F)
			case <-ctx.Done():
				return nil
			case err := <-lc.fatal:
				return err
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// sendJSON sends one JSON envelope, reporting problems on stderr.
func (lc *lineClient) sendJSON(ctx context.Context, line string) {
	if line == "" {
		return
	}
	var env protocol.Envelope
	if err := json.Unmarshal([]byte(line), &env); err != nil || env.Kind == "" {
		lc.problem("not an envelope (want a JSON object with a kind): %.80s", line)
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lc.p.Send(sctx, &env); err != nil {
		lc.problem("not sent: %v", err)
	}
}

// problem reports bad input without stopping.
func (lc *lineClient) problem(format string, args ...any) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	fmt.Fprintf(lc.errOut, "%s\n", termtext.Indent("! "+fmt.Sprintf(format, args...), indent))
}

// readLines runs the readable mode until the input ends or /quit.
func (lc *lineClient) readLines(ctx context.Context, in io.Reader) error {
	ch, errc := lines(in)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-lc.fatal:
			return err
		case line, ok := <-ch:
			if !ok {
				return <-errc
			}
			if quit := lc.input(ctx, strings.TrimSpace(line)); quit {
				return nil
			}
		}
	}
}

// input handles one typed line and reports whether it was /quit.
func (lc *lineClient) input(ctx context.Context, line string) bool {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	switch {
	case line == "":
	case line == "/quit" || line == "/exit":
		return true
	case line == "/help":
		to := "everyone"
		if t := lc.defaultTargets(); len(t) > 0 {
			to = strings.Join(t, ", ")
		}
		lc.printf("text: a chat to %s (\"@id text\" to one participant) · {json}: an envelope · /approve N · /reject N [reason] · /proposals · /quit", to)
	case line == "/proposals":
		lc.listProposals()
	case strings.HasPrefix(line, "/approve") || strings.HasPrefix(line, "/reject"):
		lc.decide(sctx, line)
	case strings.HasPrefix(line, "{"):
		lc.sendJSON(ctx, line)
	case strings.HasPrefix(line, "/"):
		lc.printf("unknown command %s; /help lists them", strings.Fields(line)[0])
	default:
		if _, err := lc.p.Chat(sctx, line, lc.targets(line)...); err != nil {
			lc.printf("! not sent: %v", err)
		}
	}
	return false
}

// targets returns the recipients of a typed chat: the participant a
// leading "@id" names when the space has it, else the default ones.
func (lc *lineClient) targets(line string) []string {
	if lc.cfg != nil && strings.HasPrefix(line, "@") {
		id := strings.TrimRight(strings.Fields(line)[0][1:], ",:")
		if lc.cfg.Participant(id) != nil {
			return []string{id}
		}
	}
	return lc.defaultTargets()
}

// defaultTargets returns the recipients of a typed chat: the participant's
// default_to.chat, else the space's, else everyone (none).
func (lc *lineClient) defaultTargets() []string {
	if lc.cfg == nil {
		return nil
	}
	if p := lc.cfg.Participant(lc.p.ID()); p != nil && len(p.DefaultTo["chat"]) > 0 {
		return p.DefaultTo["chat"]
	}
	return lc.cfg.Defaults.DefaultTo["chat"]
}

// printf writes one line of output. Everything printed goes through here
// or problem, and both clean it: the arguments are mostly what others sent
// (texts, ids, reasons, tool output, errors), which must not steer the
// terminal, and a line break in them continues the line, indented.
func (lc *lineClient) printf(format string, args ...any) {
	line := termtext.Indent(fmt.Sprintf(format, args...), indent)
	lc.mu.Lock()
	defer lc.mu.Unlock()
	fmt.Fprintf(lc.out, "%s\n", line)
}

// propose numbers a proposal and tells how to answer it.
func (lc *lineClient) propose(pr *participant.Proposal) {
	lc.mu.Lock()
	if _, seen := lc.numbers[pr.ID()]; seen {
		lc.mu.Unlock()
		return
	}
	lc.next++
	n := lc.next
	lc.proposals[n], lc.numbers[pr.ID()] = pr, n
	lc.order = append(lc.order, n)
	if len(lc.order) > maxNumbered {
		old := lc.proposals[lc.order[0]]
		delete(lc.proposals, lc.order[0])
		delete(lc.numbers, old.ID())
		lc.order = lc.order[1:]
	}
	lc.mu.Unlock()
	lc.printf("[#%d] %s proposes %s to %s — /approve %d or /reject %d", n, termtext.Line(pr.From()), describeCall(pr.Method, pr.Params), termtext.Line(strings.Join(pr.To(), ",")), n, n)
}

// listProposals prints the proposals still open.
func (lc *lineClient) listProposals() {
	lc.mu.Lock()
	nums := slices.Clone(lc.order)
	props := make([]*participant.Proposal, len(nums))
	for i, n := range nums {
		props[i] = lc.proposals[n]
	}
	lc.mu.Unlock()
	open := 0
	for i, pr := range props {
		if pr.Status().Settlement != participant.Open {
			continue
		}
		open++
		lc.printf("[#%d] %s proposes %s", nums[i], termtext.Line(pr.From()), describeCall(pr.Method, pr.Params))
	}
	if open == 0 {
		lc.printf("no open proposals")
	}
}

// decide answers "/approve N" or "/reject N [reason]". The participant
// refuses a decision on a proposal settled already, by anyone.
func (lc *lineClient) decide(ctx context.Context, line string) {
	fields := strings.Fields(line)
	if len(fields) < 2 {
		lc.printf("usage: %s N (the number shown with the proposal)", fields[0])
		return
	}
	n, err := strconv.Atoi(strings.TrimPrefix(fields[1], "#"))
	lc.mu.Lock()
	var pr *participant.Proposal
	if err == nil {
		pr = lc.proposals[n]
	}
	lc.mu.Unlock()
	if pr == nil {
		lc.printf("no proposal #%s; /proposals lists them", fields[1])
		return
	}
	if fields[0] == "/reject" {
		reason := strings.Join(fields[2:], " ")
		if reason == "" {
			reason = "rejected"
		}
		err := lc.p.Reject(ctx, pr, reason)
		switch {
		case errors.Is(err, participant.ErrProposalSettled):
			lc.printf("! #%d not rejected: %s", n, settled(err))
		case err != nil:
			lc.printf("! reject #%d: %v", n, err)
		default:
			lc.printf("#%d rejected", n)
		}
		return
	}
	res, err := lc.p.Fulfill(ctx, pr)
	switch {
	case errors.Is(err, participant.ErrProposalSettled):
		lc.printf("! #%d not approved: %s", n, settled(err))
	case err != nil:
		lc.printf("! #%d failed: %v", n, err)
	default:
		lc.printf("#%d done: %s", n, summarize(res))
	}
}

// settled says how a proposal was settled, from the participant's
// refusal: "it was already rejected by bob (unsafe)".
func settled(err error) string {
	var se *participant.ProposalSettledError
	if !errors.As(err, &se) {
		return err.Error()
	}
	st := se.Status
	s := "it was already " + st.Settlement.String()
	switch {
	case st.Settlement == participant.TimedOut && st.By != "":
		s += " (its proposer " + st.By + " gave up waiting)"
	case st.Settlement == participant.Withdrawn:
		s += " by its proposer " + st.By
	case st.By != "":
		s += " by " + st.By
	}
	if st.Reason != "" && st.Settlement != participant.TimedOut {
		s += " (" + st.Reason + ")"
	}
	return s
}

// show prints an envelope readably.
func (lc *lineClient) show(env *protocol.Envelope) {
	self := lc.p.ID()
	if env.From == self && env.Kind != protocol.KindSystemError {
		return // own echoes
	}
	var text string
	switch env.Kind {
	case protocol.KindChat:
		var c protocol.Chat
		_ = env.DecodePayload(&c)
		text = env.From + ": " + c.Text
		if !env.IsBroadcast() && !env.AddressedTo(self) {
			text = env.From + " → " + strings.Join(env.To, ",") + ": " + c.Text
		}
	case protocol.KindReasoningStart, protocol.KindReasoningThought, protocol.KindReasoningConclusion:
		var r protocol.Reasoning
		_ = env.DecodePayload(&r)
		text = "  (" + env.From + " " + strings.TrimPrefix(env.Kind, "reasoning/") + ") " + r.Message
	case protocol.KindMCPRequest:
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = env.DecodePayload(&m)
		if listing(m.Method) {
			lc.hush(env.ID)
			return
		}
		text = "  " + env.From + " → " + strings.Join(env.To, ",") + ": " + describeCall(m.Method, m.Params)
	case protocol.KindMCPResponse:
		if lc.hushed(env) {
			return
		}
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = env.DecodePayload(&m)
		if m.Error != nil {
			text = "  " + env.From + " ↩ error: " + m.Error.Message
		} else {
			text = "  " + env.From + " ↩ " + summarize(m.Result)
		}
	case protocol.KindMCPProposal:
		return // propose prints it, numbered
	case protocol.KindSystemPresence:
		var p struct {
			Event       string `json:"event"`
			Participant struct {
				ID string `json:"id"`
			} `json:"participant"`
		}
		_ = env.DecodePayload(&p)
		text = "* " + p.Participant.ID + " " + p.Event
	case protocol.KindSystemError:
		var e protocol.SystemError
		_ = env.DecodePayload(&e)
		text = "! " + e.Error + ": " + e.Message
	case protocol.KindSystemWelcome, protocol.KindChatAcknowledge, protocol.KindParticipantStatus,
		protocol.KindSystemHeartbeat, protocol.KindFloorRespondingTo, protocol.KindStreamRequest,
		protocol.KindStreamOpen, protocol.KindStreamClose:
		return // bookkeeping a person need not read
	default:
		text = "  " + env.From + " " + env.Kind + " " + clip(string(env.Payload), 200)
	}
	lc.printf("%s", text)
}

// describeCall shows an MCP call: "tools/call add {"a":2}".
func describeCall(method string, params json.RawMessage) string {
	if method != "tools/call" {
		return strings.TrimSpace(method + " " + clip(string(params), 120))
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name + " " + clip(string(p.Arguments), 200)
}

// summarize shows a tool result: its text content, else its JSON.
func summarize(raw json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(raw, &r) == nil && len(r.Content) > 0 {
		var texts []string
		for _, c := range r.Content {
			if c.Type == "text" {
				texts = append(texts, c.Text)
			}
		}
		s := clip(strings.Join(texts, " "), 300)
		if r.IsError {
			s = "error: " + s
		}
		return s
	}
	return clip(string(raw), 300)
}

// clip shortens s to n bytes (on a rune boundary), marking the cut.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// resolveParticipant picks who joins a space interactively: the flag; the
// space's default_participant; the only participant without a command; an
// error listing the candidates.
func resolveParticipant(cfg *space.Config, flag string) (string, error) {
	if flag != "" {
		if cfg.Participant(flag) == nil {
			return "", fmt.Errorf("--participant %s: no such participant in %s", flag, cfg.Path)
		}
		return flag, nil
	}
	if d := cfg.Space.DefaultParticipant; d != "" && cfg.Participant(d) != nil {
		return d, nil
	}
	var humans []string
	for _, p := range cfg.Participants {
		if p.Command == "" && p.MCPServer == nil && !p.AutoConnect {
			humans = append(humans, p.ID)
		}
	}
	if len(humans) == 1 {
		return humans[0], nil
	}
	return "", fmt.Errorf("which participant are you? choose with --participant (candidates: %s)", strings.Join(humans, ", "))
}
