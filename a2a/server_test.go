package a2a_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/internal/testutil"
)

// echo is an executor: "ask" asks for input once (the answer is echoed),
// "block" works until canceled, "fail" fails, "reject" rejects, anything
// else is echoed as an artifact.
func echo(ctx context.Context, run *a2a.Run) error {
	text := run.Message.Text()
	switch {
	case text == "ask" && len(run.History) == 0:
		return run.End(a2a.TaskStateInputRequired, a2a.TextPart("What should I echo?"))
	case text == "block":
		_ = run.Working("blocking")
		<-ctx.Done()
		return ctx.Err()
	case text == "fail":
		return errors.New("it failed on purpose")
	case text == "reject":
		return run.End(a2a.TaskStateRejected, a2a.TextPart("no"))
	}
	if err := run.Working("echoing"); err != nil {
		return err
	}
	if err := run.AddArtifact(a2a.Artifact{Name: "echo", Parts: []a2a.Part{a2a.TextPart("echo: " + text)}}); err != nil {
		return err
	}
	return nil
}

type fixture struct {
	srv  *a2a.Server
	http *httptest.Server
}

// start serves echo with callers named by the bearer token ("alice",
// "bob"), no token being refused.
func start(t *testing.T, mod func(*a2a.Options)) *fixture {
	t.Helper()
	opts := a2a.Options{
		Card: &a2a.AgentCard{Name: "echo", Description: "Echoes.", Version: "1.0.0",
			Capabilities:      a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
			DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
			Skills: []a2a.AgentSkill{{ID: "echo", Name: "echo", Description: "Echoes.", Tags: []string{"test"}}}},
		Executor: a2a.ExecutorFunc(echo),
		Authenticate: func(r *http.Request) (string, error) {
			tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || (tok != "alice" && tok != "bob") {
				return "", errors.New("bad token")
			}
			return tok, nil
		},
	}
	if mod != nil {
		mod(&opts)
	}
	srv, err := a2a.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		_ = srv.Close()
		hs.Close()
	})
	return &fixture{srv: srv, http: hs}
}

func (f *fixture) client(caller string) *a2a.Client {
	return a2a.NewClient(f.http.URL+"/", a2a.ClientOptions{Header: http.Header{"Authorization": {"Bearer " + caller}}})
}

func userMessage(text string) *a2a.Message {
	return &a2a.Message{MessageID: fmt.Sprintf("m-%d", time.Now().UnixNano()), Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(text)}}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSendMessageBlocking(t *testing.T) {
	f := start(t, nil)
	ctx := ctxT(t)
	res, err := f.client("alice").SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage("hello")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	if task == nil || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task %+v", task)
	}
	if len(task.Artifacts) != 1 || task.Artifacts[0].Text() != "echo: hello" {
		t.Fatalf("artifacts %+v", task.Artifacts)
	}
	if task.ContextID == "" || len(task.History) < 2 || task.History[0].Text() != "hello" {
		t.Fatalf("context %q history %+v", task.ContextID, task.History)
	}
}

func TestCardAndStates(t *testing.T) {
	f := start(t, nil)
	ctx := ctxT(t)
	card, err := a2a.FetchCard(ctx, f.http.URL, a2a.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if card.Name != "echo" || card.Skills[0].ID != "echo" {
		t.Fatalf("card %+v", card)
	}
	resp, err := http.Post(f.http.URL+a2a.CardPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST card: %s", resp.Status)
	}
	c := f.client("alice")
	for text, want := range map[string]a2a.TaskState{"fail": a2a.TaskStateFailed, "reject": a2a.TaskStateRejected, "ask": a2a.TaskStateInputRequired} {
		res, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage(text)})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Task.Status.State; got != want {
			t.Errorf("%s: state %s, want %s", text, got, want)
		}
		if text == "fail" && !strings.Contains(res.Task.Status.Message.Text(), "on purpose") {
			t.Errorf("fail: status message %+v", res.Task.Status.Message)
		}
	}
}

func TestInputRequiredThenContinue(t *testing.T) {
	f := start(t, nil)
	ctx := ctxT(t)
	c := f.client("alice")
	res, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage("ask")})
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message.Text() != "What should I echo?" {
		t.Fatalf("status %+v", task.Status)
	}
	// Another context id than the task's is refused.
	m := userMessage("parrot")
	m.TaskID, m.ContextID = task.ID, "elsewhere"
	if _, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: m}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("mismatched context: %v", err)
	}
	m.ContextID = ""
	res, err = c.SendMessage(ctx, a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.ID != task.ID || res.Task.Status.State != a2a.TaskStateCompleted || res.Task.Artifacts[0].Text() != "echo: parrot" {
		t.Fatalf("continued task %+v", res.Task)
	}
	// A finished task takes no more messages.
	m = userMessage("again")
	m.TaskID = task.ID
	if _, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: m}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Fatalf("message to a finished task: %v", err)
	}
}

func TestStreamEvents(t *testing.T) {
	f := start(t, nil)
	ctx := ctxT(t)
	st, err := f.client("alice").SendStreamingMessage(ctx, a2a.SendMessageRequest{Message: userMessage("hi")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var kinds []string
	for {
		ev, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %v: %v", kinds, err)
		}
		switch {
		case ev.Task != nil:
			kinds = append(kinds, "task:"+string(ev.Task.Status.State))
		case ev.StatusUpdate != nil:
			kinds = append(kinds, "status:"+string(ev.StatusUpdate.Status.State))
		case ev.ArtifactUpdate != nil:
			kinds = append(kinds, "artifact:"+ev.ArtifactUpdate.Artifact.Text())
		}
	}
	want := "task:TASK_STATE_SUBMITTED status:TASK_STATE_WORKING status:TASK_STATE_WORKING artifact:echo: hi status:TASK_STATE_COMPLETED"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
}

func TestCancelAndSubscribe(t *testing.T) {
	f := start(t, nil)
	ctx := ctxT(t)
	c := f.client("alice")
	res, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage("block"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	st, err := c.SubscribeToTask(ctx, a2a.SubscribeToTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first, err := st.Next()
	if err != nil || first.Task == nil || first.Task.ID != id {
		t.Fatalf("first event %+v, %v", first, err)
	}
	task, err := c.CancelTask(ctx, a2a.CancelTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("canceled task %+v", task.Status)
	}
	var last a2a.StreamResponse
	for {
		ev, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if last.StatusUpdate == nil || last.StatusUpdate.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("last event %+v", last)
	}
	if _, err := c.CancelTask(ctx, a2a.CancelTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := c.SubscribeToTask(ctx, a2a.SubscribeToTaskRequest{ID: id}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Fatalf("subscribe to a finished task: %v", err)
	}
}

func TestAnotherCallersTask(t *testing.T) {
	f := start(t, nil)
	ctx := ctxT(t)
	alice, bob := f.client("alice"), f.client("bob")
	res, err := alice.SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage("ask")})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	if _, err := bob.GetTask(ctx, a2a.GetTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob gets alice's task: %v", err)
	}
	if _, err := bob.CancelTask(ctx, a2a.CancelTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob cancels alice's task: %v", err)
	}
	if _, err := bob.SubscribeToTask(ctx, a2a.SubscribeToTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob subscribes to alice's task: %v", err)
	}
	m := userMessage("my answer")
	m.TaskID = id
	if _, err := bob.SendMessage(ctx, a2a.SendMessageRequest{Message: m}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob answers alice's task: %v", err)
	}
	list, err := bob.ListTasks(ctx, a2a.ListTasksRequest{})
	if err != nil || len(list.Tasks) != 0 || list.TotalSize != 0 {
		t.Errorf("bob lists %+v, %v", list, err)
	}
	// Alice's task is untouched: still waiting for her input.
	task, err := alice.GetTask(ctx, a2a.GetTaskRequest{ID: id})
	if err != nil || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("alice's task %+v, %v", task, err)
	}
}

func TestListTasksPages(t *testing.T) {
	f := start(t, nil)
	ctx := ctxT(t)
	c := f.client("alice")
	for i := range 5 {
		if _, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	token := ""
	size := int32(2)
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("more pages than tasks")
		}
		list, err := c.ListTasks(ctx, a2a.ListTasksRequest{PageSize: &size, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if list.TotalSize != 5 {
			t.Fatalf("total %d", list.TotalSize)
		}
		for _, task := range list.Tasks {
			if seen[task.ID] {
				t.Fatalf("task %s twice", task.ID)
			}
			seen[task.ID] = true
			if task.Artifacts != nil {
				t.Fatal("artifacts listed without includeArtifacts")
			}
		}
		if token = list.NextPageToken; token == "" {
			break
		}
	}
	if len(seen) != 5 {
		t.Fatalf("listed %d tasks", len(seen))
	}
	bad := int32(1000)
	if _, err := c.ListTasks(ctx, a2a.ListTasksRequest{PageSize: &bad}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("page size 1000: %v", err)
	}
	if _, err := c.ListTasks(ctx, a2a.ListTasksRequest{PageToken: "%%%"}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Fatalf("forged page token: %v", err)
	}
}

// rawPost posts body with headers and returns the status and the JSON-RPC
// error code (0 for none).
func rawPost(t *testing.T, url string, body []byte, header map[string]string) (int, int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer alice")
	req.Header.Set(a2a.HeaderVersion, a2a.ProtocolVersion)
	resp, raw := testutil.HTTPDo(t, req, header)
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error *a2a.Error      `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: not JSON-RPC: %s", resp.Status, raw)
	}
	if r.Error == nil {
		return resp.StatusCode, 0, string(r.ID)
	}
	return resp.StatusCode, r.Error.Code, string(r.ID)
}

func TestHostileRequests(t *testing.T) {
	f := start(t, func(o *a2a.Options) { o.MaxBodyBytes = 4096 })
	url := f.http.URL + "/"
	send := `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`
	for _, tc := range []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   int
	}{
		{"not JSON", `{"jsonrpc":`, nil, 200, a2a.CodeParseError},
		{"batch", `[` + send + `]`, nil, 200, a2a.CodeInvalidRequest},
		{"no jsonrpc", `{"id":1,"method":"GetTask","params":{"id":"x"}}`, nil, 200, a2a.CodeInvalidRequest},
		{"no id", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`, nil, 200, a2a.CodeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"GetTask"}`, nil, 200, a2a.CodeInvalidRequest},
		{"0.3 method", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`, nil, 200, a2a.CodeMethodNotFound},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"DropTables"}`, nil, 200, a2a.CodeMethodNotFound},
		{"params array", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}`, nil, 200, a2a.CodeInvalidParams},
		{"params wrong type", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}`, nil, 200, a2a.CodeInvalidParams},
		{"no parts", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}`, nil, 200, a2a.CodeInvalidParams},
		{"part with two contents", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","url":"b"}]}}}`, nil, 200, a2a.CodeInvalidParams},
		{"agent role", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"a"}]}}}`, nil, 200, a2a.CodeInvalidParams},
		{"push config", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}]},"configuration":{"taskPushNotificationConfig":{"url":"http://127.0.0.1:1/"}}}}`, nil, 200, a2a.CodePushNotificationNotSupported},
		{"unknown task", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nope"}}`, nil, 200, a2a.CodeTaskNotFound},
		{"no version", send, map[string]string{a2a.HeaderVersion: ""}, 200, a2a.CodeVersionNotSupported},
		{"version 0.3", send, map[string]string{a2a.HeaderVersion: "0.3"}, 200, a2a.CodeVersionNotSupported},
		{"no token", send, map[string]string{"Authorization": ""}, 401, a2a.CodeUnauthenticated},
		{"wrong token", send, map[string]string{"Authorization": "Bearer mallory"}, 401, a2a.CodeUnauthenticated},
		{"text/plain", send, map[string]string{"Content-Type": "text/plain"}, 415, a2a.CodeInvalidRequest},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("a", 5000) + `"}]}}}`, nil, 413, a2a.CodeInvalidRequest},
		{"extended card", `{"jsonrpc":"2.0","id":1,"method":"GetExtendedAgentCard"}`, nil, 200, a2a.CodeUnsupportedOperation},
	} {
		status, code, _ := rawPost(t, url, []byte(tc.body), tc.header)
		if status != tc.status || code != tc.code {
			t.Errorf("%s: %d code %d, want %d code %d", tc.name, status, code, tc.status, tc.code)
		}
	}
	// The id of a refused request is echoed.
	if _, _, id := rawPost(t, url, []byte(`{"jsonrpc":"2.0","id":"abc","method":"Nope"}`), nil); id != `"abc"` {
		t.Errorf("id %s", id)
	}
	// Nothing was lost: the valid request still works after all that.
	if status, code, _ := rawPost(t, url, []byte(send), nil); status != 200 || code != 0 {
		t.Errorf("valid request after hostile ones: %d code %d", status, code)
	}
}

func TestLimits(t *testing.T) {
	f := start(t, func(o *a2a.Options) { o.MaxActivePerCaller = 1; o.MaxStreamsPerCaller = 1 })
	ctx := ctxT(t)
	c := f.client("alice")
	res, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage("block"),
		Configuration: &a2a.SendMessageConfiguration{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage("x")}); !errors.Is(err, a2a.ErrInternal) {
		t.Fatalf("a second task past the limit: %v", err)
	}
	// Bob has his own allowance.
	if _, err := f.client("bob").SendMessage(ctx, a2a.SendMessageRequest{Message: userMessage("x")}); err != nil {
		t.Fatalf("bob: %v", err)
	}
	st, err := c.SubscribeToTask(ctx, a2a.SubscribeToTaskRequest{ID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubscribeToTask(ctx, a2a.SubscribeToTaskRequest{ID: res.Task.ID}); !errors.Is(err, a2a.ErrInternal) {
		t.Fatalf("a second stream past the limit: %v", err)
	}
	if _, err := c.CancelTask(ctx, a2a.CancelTaskRequest{ID: res.Task.ID}); err != nil {
		t.Fatal(err)
	}
}

// A stream whose reader does not keep up is closed, the task goes on, and
// nothing is lost: the task has every artifact.
func TestSlowStreamDropped(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	f := start(t, func(o *a2a.Options) {
		o.StreamBuffer = 1
		o.MaxBodyBytes = 1 << 20
		o.Executor = a2a.ExecutorFunc(func(ctx context.Context, run *a2a.Run) error {
			for i := range 60 {
				if err := run.AddArtifact(a2a.Artifact{Name: fmt.Sprint(i), Parts: []a2a.Part{a2a.TextPart(big)}}); err != nil {
					return err
				}
			}
			return nil
		})
	})
	ctx := ctxT(t)
	c := a2a.NewClient(f.http.URL+"/", a2a.ClientOptions{Header: http.Header{"Authorization": {"Bearer alice"}}, MaxEventBytes: 1 << 20})
	st, err := c.SendStreamingMessage(ctx, a2a.SendMessageRequest{Message: userMessage("flood")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	first, err := st.Next()
	if err != nil || first.Task == nil {
		t.Fatalf("first %+v, %v", first, err)
	}
	// Not reading while the task floods the stream.
	var task *a2a.Task
	deadline := time.Now().Add(10 * time.Second)
	for {
		task, err = c.GetTask(ctx, a2a.GetTaskRequest{ID: first.Task.ID})
		if err != nil {
			t.Fatal(err)
		}
		if task.Status.State.Terminal() || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 60 {
		t.Fatalf("task %s with %d artifacts", task.Status.State, len(task.Artifacts))
	}
	n := 0
	for {
		if _, err = st.Next(); err != nil {
			break
		}
		n++
	}
	if !errors.Is(err, a2a.ErrStreamBroken) || n >= 62 {
		t.Fatalf("the slow stream got %d events and ended with %v; want it closed early", n, err)
	}
}
