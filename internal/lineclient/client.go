package lineclient

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

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

// maxInputLine bounds one line typed or read from --fifo-in.
const maxInputLine = 1 << 20

// Options configures the line client.
type Options struct {
	Gateway, Space, Token, ID string
	// JSONIn and JSONOut switch to script mode: envelopes as JSON lines.
	JSONIn, JSONOut string
	// Config, when known, gives the default recipients of chats.
	Config *space.Config
	// HintAfter is how long a chat to everyone may go without a reaction
	// before the client says whom to address. 0 means never, except with
	// a Config (`mew space connect`, `mew demo`): DefaultHintAfter then.
	HintAfter time.Duration
	// Intro are lines for a newcomer (mew demo's "what to try"), printed
	// first.
	Intro []string
	// In is what the user types (a terminal, a pipe); Out the readable
	// output; Err where script mode reports bad input.
	In       io.Reader
	Out, Err io.Writer
}

// DefaultHintAfter is the wait before the no-answer hint.
const DefaultHintAfter = 5 * time.Second

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

	feed       *feed.Reader          // reads the envelopes, as the terminal UI does
	reasonings map[string]*reasoning // open ones, by reasoning id (start's id, thoughts' context)
	rorder     []string              // their ids, oldest first
	calls      map[string]call       // mcp/requests shown with their response, by id, until it comes
	corder     []string              // their ids, oldest first
	typed      map[string]bool       // ids of the requests I typed as JSON: their responses are shown
	torder     []string              // their ids, oldest first
	roster     map[string]bool       // the participants present (me excluded) → may chat
	hintGen    int                   // counts my chats to everyone; a hint is for the latest
	awaiting   bool                  // my latest chat to everyone has had no reaction yet

	fatal chan error // the connection ended for good; one slot
}

// reasoning is an agent's reasoning in progress, shown as a status.
type reasoning struct {
	from     string
	thoughts int    // reasoning/thought seen
	doing    string // what it is doing now: "calling calculator/add"
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

// Run connects and runs the line client until the input ends, /quit, or
// ctx ends.
func Run(ctx context.Context, o Options) error {
	p, err := participant.New(participant.Options{Client: client.Options{
		Gateways: client.SplitGateways(o.Gateway), Space: o.Space, Token: o.Token, ParticipantID: o.ID, Reconnect: true,
	}})
	if err != nil {
		return err
	}
	defer p.Close()
	lc := &lineClient{
		p: p, out: o.Out, errOut: o.Err, cfg: o.Config, hintAfter: o.HintAfter,
		proposals: map[int]*participant.Proposal{}, numbers: map[string]int{}, fatal: make(chan error, 1),
		feed: feed.NewReader(), reasonings: map[string]*reasoning{}, calls: map[string]call{}, typed: map[string]bool{},
		roster: map[string]bool{},
	}
	if o.HintAfter == 0 && o.Config != nil {
		lc.hintAfter = DefaultHintAfter // `mew space connect` and `mew demo`
	}
	for _, l := range o.Intro {
		fmt.Fprintln(lc.out, l)
	}
	// On a terminal the output is drawn above a status line and, when the
	// input is the terminal too, the line being typed.
	var scr *termScreen
	in := o.In
	inTTY, inIsTTY := IsTerminal(in)
	switch outTTY, ok := IsTerminal(lc.out); {
	case ok && o.JSONIn == "" && o.JSONOut == "" && inIsTTY:
		scr = newTermScreen(outTTY, func() int { return widthOf(outTTY) })
		lc.disp = scr
	case ok && o.JSONIn == "" && o.JSONOut == "":
		ss := &statusScreen{out: outTTY, width: func() int { return widthOf(outTTY) }}
		defer ss.close() // the status goes at the end
		lc.disp = ss
	default:
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
	if scr != nil {
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
		lc.mu.Lock()
		lc.typed[env.ID] = true
		lc.torder = append(lc.torder, env.ID)
		if len(lc.torder) > maxOpen {
			delete(lc.typed, lc.torder[0])
			lc.torder = lc.torder[1:]
		}
		lc.mu.Unlock()
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
	return lc.serve(ctx, ch, func() error { return <-errc })
}

// serve takes in the lines typed until /quit, ctx ends, the connection
// ends for good (its error), or the lines end (end's error).
func (lc *lineClient) serve(ctx context.Context, lines <-chan string, end func() error) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-lc.fatal:
			return err
		case line, ok := <-lines:
			if !ok {
				return end()
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
