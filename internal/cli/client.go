package cli

import (
	"bufio"
	"cmp"
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

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/summary"
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
	o.HintAfter = defaultHintAfter
	connect := &cobra.Command{
		Use:   "connect",
		Short: "Connect to a space: type to chat, or pipe JSON envelopes in and out",
		Long: `Connect to a space as the participant the token names.

On a terminal, the full-screen UI opens (docs/tui.md). With --no-ui, a pipe,
or TERM unset or dumb, the line client runs: what others send is shown
readably; plain text you type is sent as a chat ("@id text" to one participant), a JSON object as an
envelope; /approve N and /reject N answer the numbered proposals; /help lists
the commands. An agent's reasoning is one status line under the conversation,
a tool's answer names whom it was for, and a chat to everyone that nobody
takes up says whom to address.

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
				return errors.New("client connect: -g/--gateway, -s/--space and -t/--token (or MEW_GATEWAY, MEW_SPACE, MEW_TOKEN) are required; in the directory of a running space, mew space connect needs none")
			}
			if outputFile != "" && fifoOut != "" {
				return errors.New("client connect: --output-file and --fifo-out cannot be combined")
			}
			o.JSONIn, o.JSONOut = fifoIn, cmp.Or(outputFile, fifoOut)
			o.Getenv = getenv
			return runLineClient(cmd.Context(), cmd, o)
		},
	}
	fl := connect.Flags()
	fl.StringVarP(&o.Gateway, "gateway", "g", "", "gateway URL, or a comma-separated list of a cluster's nodes, such as ws://localhost:8080 (or MEW_GATEWAY)")
	fl.StringVarP(&o.Space, "space", "s", "", "space id (or MEW_SPACE)")
	fl.StringVarP(&o.Token, "token", "t", "", "the participant's token (or MEW_TOKEN)")
	fl.StringVarP(&o.ID, "participant-id", "p", "", "the id to join as; another id than the token's participant is a runtime alias")
	fl.StringVar(&fifoIn, "fifo-in", "", "read JSON envelopes, one a line, from this FIFO or file instead of the terminal")
	fl.StringVar(&fifoOut, "fifo-out", "", "write every envelope seen, one compact JSON line each, to this FIFO")
	fl.StringVar(&outputFile, "output-file", "", "append every envelope seen, one compact JSON line each, to this file")
	addNoUIFlag(fl)
	fl.DurationVar(&o.HintAfter, "no-answer-hint", defaultHintAfter, "after a chat to everyone that nobody acknowledges or answers for this long, say whom to address (0: never)")
	cmd.AddCommand(connect)
	return cmd
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
	// Getenv reads the environment (TERM decides the full-screen UI); nil
	// means os.Getenv.
	Getenv func(string) string
	// HintAfter is how long a chat to everyone may go without a reaction
	// before the client says whom to address. 0 means never, except with
	// a Config (`mew space connect`, `mew demo`): defaultHintAfter then.
	HintAfter time.Duration
	// Intro are lines for a newcomer (mew demo's "what to try"): printed
	// first by the line client, shown first and in /help by the
	// full-screen UI.
	Intro []string
}

// defaultHintAfter is the wait before the no-answer hint.
const defaultHintAfter = 5 * time.Second

// lineClient is a running line client.
//
// Locks: mu guards the state below it; the display has its own lock and
// may be called with mu held (mu, then the display's), never the reverse.
type lineClient struct {
	p      *participant.Participant
	out    io.Writer
	errOut io.Writer // problems with the input: stderr in script mode, nil for the display
	disp   display
	cfg    *space.Config

	hintAfter time.Duration

	mu        sync.Mutex
	proposals map[int]*participant.Proposal // by number, from 1; the latest maxNumbered
	numbers   map[string]int                // proposal id → number
	order     []int                         // numbers, oldest first
	next      int                           // the last number given
	quiet     []string                      // ids of listing requests, whose answers are not shown

	reasonings map[string]*reasoning // open ones, by reasoning id (start's id, thoughts' context)
	rorder     []string              // their ids, oldest first
	calls      map[string]call       // mcp/requests seen, by id, until their response
	corder     []string              // their ids, oldest first
	roster     map[string]bool       // the participants present (me excluded) → may chat
	hintGen    int                   // counts my chats to everyone; a hint is for the latest
	awaiting   bool                  // my latest chat to everyone has had no reaction yet

	fatal chan error // the connection ended for good; one slot
}

// reasoning is an agent's reasoning in progress, shown as a status.
type reasoning struct {
	id, from string
	question string   // the id of the chat it answers, from the start's correlation
	thoughts int      // reasoning/thought seen
	doing    string   // what it is doing now: "calling calculator/add"
	tools    []string // the tools it called, in order, once each
}

// call is an mcp/request waiting for its response.
type call struct {
	from, to, what string
}

// maxOpen bounds the reasonings and the requests remembered.
const maxOpen = 256

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
	if wantTUI(cmd, o) {
		return runTUI(ctx, cmd, o)
	}
	p, err := participant.New(participant.Options{Client: client.Options{
		Gateways: client.SplitGateways(o.Gateway), Space: o.Space, Token: o.Token, ParticipantID: o.ID, Reconnect: true,
	}})
	if err != nil {
		return err
	}
	defer p.Close()
	lc := &lineClient{
		p: p, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), cfg: o.Config, hintAfter: o.HintAfter,
		proposals: map[int]*participant.Proposal{}, numbers: map[string]int{}, fatal: make(chan error, 1),
		reasonings: map[string]*reasoning{}, calls: map[string]call{}, roster: map[string]bool{},
	}
	if o.HintAfter == 0 && o.Config != nil {
		lc.hintAfter = defaultHintAfter // `mew space connect` and `mew demo`
	}
	for _, l := range o.Intro {
		fmt.Fprintln(lc.out, l)
	}
	// On a terminal the output is drawn above a status line and, when the
	// input is the terminal too, the line being typed.
	var scr *lineScreen
	in := cmd.InOrStdin()
	inTTY, inIsTTY := isTerminal(in)
	if outTTY, ok := isTerminal(lc.out); ok && o.JSONIn == "" && o.JSONOut == "" {
		var ed *lineEditor
		if inIsTTY {
			ed = &lineEditor{}
		}
		scr = newLineScreen(outTTY, ed)
		defer scr.close() // the status and prompt go at the end
		lc.disp = scr
	} else {
		lc.disp = &plainDisplay{out: lc.out}
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
	p.Client().OnWelcome(lc.welcome)
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
	lc.errOut = nil // readably, problems are part of the conversation
	lc.printf("connected to %s as %s; type a message, /help for commands", o.Space, p.ID())
	if scr != nil && scr.ed != nil {
		return lc.readTerminal(ctx, inTTY, scr)
	}
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
	if env.Kind == protocol.KindMCPRequest && lc.errOut == nil {
		// Typed readably: its response is shown, as the others' are.
		if env.ID == "" {
			env.ID = protocol.NewID()
		}
		lc.remember(&env)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lc.p.Send(sctx, &env); err != nil {
		lc.problem("not sent: %v", err)
	}
}

// problem reports bad input without stopping.
func (lc *lineClient) problem(format string, args ...any) {
	if lc.errOut == nil {
		lc.printf("! "+format, args...)
		return
	}
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
		to := lc.targets(line)
		gen := 0
		if len(to) == 0 {
			gen = lc.expectReaction()
		}
		if _, err := lc.p.Chat(sctx, line, to...); err != nil {
			lc.reacted()
			lc.printf("! not sent: %v", err)
		} else if gen != 0 {
			time.AfterFunc(lc.hintAfter, func() { lc.hint(gen) })
		}
	}
	return false
}

// targets returns the recipients of a typed chat: the participant a
// leading "@id" names when the space has it or it is present, else the
// default ones.
func (lc *lineClient) targets(line string) []string {
	if strings.HasPrefix(line, "@") {
		id := strings.TrimRight(strings.Fields(line)[0][1:], ",:")
		lc.mu.Lock()
		_, present := lc.roster[id]
		lc.mu.Unlock()
		if present || (lc.cfg != nil && lc.cfg.Participant(id) != nil) {
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
	lc.disp.println(termtext.Indent(fmt.Sprintf(format, args...), indent))
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
	lc.noticeReaction(env)
	var text string
	switch env.Kind {
	case protocol.KindChat:
		var c protocol.Chat
		_ = env.DecodePayload(&c)
		lc.answered(env)
		text = env.From + ": " + c.Text
		if !env.IsBroadcast() && !env.AddressedTo(self) {
			text = env.From + " → " + strings.Join(env.To, ",") + ": " + c.Text
		}
	case protocol.KindReasoningStart, protocol.KindReasoningThought:
		lc.reason(env)
		return
	case protocol.KindReasoningConclusion:
		lc.conclude(env)
		return
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
		lc.remember(env) // shown with its response
		return
	case protocol.KindMCPResponse:
		if lc.hushed(env) {
			return
		}
		c, known := lc.answeredCall(env)
		if !known {
			// My own request (/approve shows its result), or one sent
			// before I joined or not visible to me: nothing to pair with.
			return
		}
		var m struct {
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = env.DecodePayload(&m)
		result := summarize(m.Result)
		if m.Error != nil {
			result = "error: " + m.Error.Message
		}
		text = "  " + env.From + " → " + c.from + ": " + result
		if c.what != "" {
			text += "  (" + c.what + ")"
		}
	case protocol.KindMCPProposal:
		return // propose prints it, numbered
	case protocol.KindSystemPresence:
		var p protocol.Presence
		_ = env.DecodePayload(&p)
		lc.presence(&p)
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
		text = "  " + env.From + " " + env.Kind + " " + preview(string(env.Payload), 200)
	}
	lc.printf("%s", text)
}

// remember keeps an mcp/request until its response comes, and tells the
// status of its sender's reasoning what it calls.
func (lc *lineClient) remember(env *protocol.Envelope) {
	var m struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	_ = env.DecodePayload(&m)
	from := env.From
	if from == "" {
		from = lc.p.ID()
	}
	c := call{from: from, to: strings.Join(env.To, ","), what: describeCall(m.Method, m.Params)}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if env.ID != "" {
		if _, seen := lc.calls[env.ID]; !seen {
			lc.corder = append(lc.corder, env.ID)
		}
		lc.calls[env.ID] = c
		if len(lc.corder) > maxOpen {
			delete(lc.calls, lc.corder[0])
			lc.corder = lc.corder[1:]
		}
	}
	if m.Method != "tools/call" {
		return
	}
	var p struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(m.Params, &p)
	tool := p.Name
	if c.to != "" && !strings.Contains(tool, "/") {
		tool = c.to + "/" + tool
	}
	for _, r := range lc.reasonings {
		if r.from == env.From {
			r.doing = "calling " + tool
			r.used(tool)
		}
	}
	lc.disp.status(lc.statusLocked())
}

// answeredCall returns the request a response answers, forgetting it.
func (lc *lineClient) answeredCall(env *protocol.Envelope) (call, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, id := range env.CorrelationID {
		if c, ok := lc.calls[id]; ok {
			delete(lc.calls, id)
			lc.corder = slices.DeleteFunc(lc.corder, func(s string) bool { return s == id })
			return c, true
		}
	}
	return call{}, false
}

// used records that r called tool.
func (r *reasoning) used(tool string) {
	if tool != "" && !slices.Contains(r.tools, tool) {
		r.tools = append(r.tools, tool)
	}
}

// reason follows a reasoning/start or reasoning/thought in the status line.
func (lc *lineClient) reason(env *protocol.Envelope) {
	var p protocol.Reasoning
	_ = env.DecodePayload(&p)
	id := env.Context
	if env.Kind == protocol.KindReasoningStart {
		id = env.ID
	}
	if id == "" {
		return // a thought of no reasoning
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	r := lc.reasonings[id]
	if r != nil && r.from != env.From {
		return // not for another to speak in
	}
	if r == nil {
		r = &reasoning{id: id, from: env.From}
		lc.reasonings[id] = r
		lc.rorder = append(lc.rorder, id)
		if len(lc.rorder) > maxOpen {
			delete(lc.reasonings, lc.rorder[0])
			lc.rorder = lc.rorder[1:]
		}
	}
	if env.Kind == protocol.KindReasoningStart {
		if len(env.CorrelationID) > 0 {
			r.question = env.CorrelationID[0]
		}
	} else {
		r.thoughts++
		r.doing = preview(summary.Step(&p), 60)
		var calls []struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(p.ActionInput, &calls) == nil {
			for _, c := range calls {
				r.used(c.Name)
			}
		}
	}
	lc.disp.status(lc.statusLocked())
}

// statusLocked is the status line: each open reasoning, as "assistant is
// thinking · 2 thoughts · calling calculator/add". lc.mu is held.
func (lc *lineClient) statusLocked() string {
	var parts []string
	for _, id := range lc.rorder {
		r := lc.reasonings[id]
		s := termtext.Line(r.from) + " is thinking"
		if r.thoughts > 0 {
			s += " · " + plural(r.thoughts, "thought")
		}
		if r.doing != "" {
			s += " · " + termtext.Line(r.doing)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "  |  ")
}

// conclude ends a reasoning at its reasoning/conclusion. Its text is not
// shown: the chat that follows is the answer. A cancellation says why.
func (lc *lineClient) conclude(env *protocol.Envelope) {
	var p struct {
		Cancelled bool   `json:"cancelled"`
		Reason    string `json:"reason"`
	}
	_ = env.DecodePayload(&p)
	id := env.Context
	if id == "" {
		id = env.ID
	}
	lc.mu.Lock()
	r := lc.reasonings[id]
	if r == nil || r.from != env.From { // its start was not seen, or the answer came first
		lc.mu.Unlock()
		return
	}
	summary := lc.endLocked(r)
	lc.mu.Unlock()
	if p.Cancelled {
		summary = "  (" + r.from + " stopped thinking: cancelled"
		if p.Reason != "" {
			summary += ": " + p.Reason
		}
		summary += ")"
	}
	lc.printf("%s", summary)
}

// answered ends the reasoning a chat answers, if it is still open (an
// agent may conclude after its answer).
func (lc *lineClient) answered(env *protocol.Envelope) {
	lc.mu.Lock()
	var r *reasoning
	for _, id := range lc.rorder {
		if c := lc.reasonings[id]; c.from == env.From && c.question != "" && env.CorrelatesWith(c.question) {
			r = c
			break
		}
	}
	if r == nil {
		lc.mu.Unlock()
		return
	}
	summary := lc.endLocked(r)
	lc.mu.Unlock()
	lc.printf("%s", summary)
}

// endLocked forgets r, updates the status and returns the one line left
// of r: "  (assistant reasoned: 2 thoughts, used calculator/add)". lc.mu
// is held.
func (lc *lineClient) endLocked(r *reasoning) string {
	delete(lc.reasonings, r.id)
	lc.rorder = slices.DeleteFunc(lc.rorder, func(s string) bool { return s == r.id })
	lc.disp.status(lc.statusLocked())
	s := "  (" + r.from + " reasoned: " + plural(r.thoughts, "thought")
	if len(r.tools) > 0 {
		s += ", used " + strings.Join(r.tools, ", ")
	}
	return s + ")"
}

// welcome starts the roster over from a system/welcome.
func (lc *lineClient) welcome(w *protocol.Welcome) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	clear(lc.roster)
	for _, p := range w.Participants {
		if p.ID != w.You.ID {
			lc.roster[p.ID] = mayChat(p.Capabilities)
		}
	}
}

// presence follows who joins and leaves; a participant that leaves ends
// its reasonings.
func (lc *lineClient) presence(p *protocol.Presence) {
	id := p.Participant.ID
	lc.mu.Lock()
	defer lc.mu.Unlock()
	switch p.Event {
	case protocol.PresenceJoin:
		if id != lc.p.ID() {
			lc.roster[id] = mayChat(p.Participant.Capabilities)
		}
	case protocol.PresenceLeave:
		delete(lc.roster, id)
		for _, rid := range slices.Clone(lc.rorder) {
			if r := lc.reasonings[rid]; r.from == id {
				delete(lc.reasonings, rid)
				lc.rorder = slices.DeleteFunc(lc.rorder, func(s string) bool { return s == rid })
			}
		}
		lc.disp.status(lc.statusLocked())
	}
}

// mayChat reports whether capabilities allow sending a chat.
func mayChat(caps []json.RawMessage) bool {
	set, err := capability.Compile(caps)
	return err == nil && set.Allows(protocol.KindChat, []byte(`{"text":"?"}`))
}

// expectReaction notes a chat of mine to everyone about to be sent and
// returns its number for hint; 0 when hints are off.
func (lc *lineClient) expectReaction() int {
	if lc.hintAfter <= 0 {
		return 0
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.hintGen++
	lc.awaiting = true
	return lc.hintGen
}

// reacted notes that my chat to everyone needs no hint.
func (lc *lineClient) reacted() {
	lc.mu.Lock()
	lc.awaiting = false
	lc.mu.Unlock()
}

// noticeReaction ends the wait for a reaction to my chat to everyone when
// another participant says something, acknowledges, reasons or proposes.
func (lc *lineClient) noticeReaction(env *protocol.Envelope) {
	switch env.Kind {
	case protocol.KindChat, protocol.KindChatAcknowledge, protocol.KindReasoningStart, protocol.KindMCPProposal:
		if env.From != "" && !strings.HasPrefix(env.From, "system:") {
			lc.reacted()
		}
	}
}

// hint says why chat number gen got no answer, when it got none: nobody
// was addressed and no one took it up. It names the participants present
// that may chat, the ones a person would address.
func (lc *lineClient) hint(gen int) {
	lc.mu.Lock()
	if gen != lc.hintGen || !lc.awaiting {
		lc.mu.Unlock()
		return
	}
	lc.awaiting = false
	var who []string
	for id, chats := range lc.roster {
		if chats && !lc.human(id) {
			who = append(who, id)
		}
	}
	lc.mu.Unlock()
	slices.Sort(who)
	wait := lc.hintAfter.String()
	if len(who) == 0 {
		lc.printf("no one answered within %s, and no one here can: the space has no agent connected", wait)
		return
	}
	lc.printf("no one answered within %s: address an agent with @name (agents here: %s)", wait, strings.Join(who, ", "))
}

// human reports whether the space's configuration, when known, has id as a
// person: a participant the space does not start or bridge.
func (lc *lineClient) human(id string) bool {
	if lc.cfg == nil {
		return false
	}
	p := lc.cfg.Participant(id)
	return p != nil && p.Command == "" && p.MCPServer == nil && !p.AutoConnect
}

// describeCall shows an MCP call: "tools/call add {"a":2}".
func describeCall(method string, params json.RawMessage) string {
	if method != "tools/call" {
		return strings.TrimSpace(method + " " + preview(string(params), 120))
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Name + " " + preview(string(p.Arguments), 200)
}

// summarize shows a tool result on one line: its text (see summary.Result),
// "error: " first when it is one.
func summarize(raw json.RawMessage) string {
	text, isErr := summary.Result(raw)
	if isErr {
		return "error: " + preview(text, 300)
	}
	return preview(text, 300)
}

// preview folds s's white space and cuts it to n bytes, marking the cut.
func preview(s string, n int) string { return clip.Mark(strings.Join(strings.Fields(s), " "), n) }

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
