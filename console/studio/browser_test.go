package studio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mew-protocol/mew/internal/browsertest"
	"github.com/mew-protocol/mew/internal/cli"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/toolsagent"
)

// browser drives the studio's page in Chromium.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func (b browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// set gives a field a value as a person would leave it: the value, then
// the input and change events the page listens to.
func (b browser) set(sel, value string) {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%s); if (!e) return false;
		if (e.type === "checkbox") e.checked = %s === "true"; else e.value = %s;
		e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true})); return true })()`,
		jsString(sel), jsString(value), jsString(value))
	ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
	if err != nil || !ok {
		b.t.Fatalf("set %s: %v (found: %v)", sel, err, ok)
	}
}

// typeIn clears a field and types text into it key by key.
func (b browser) typeIn(sel, text string) {
	b.t.Helper()
	b.set(sel, "")
	b.do("type in "+sel, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// wait waits until the JavaScript condition holds, failing with what the
// page shows otherwise.
func (b browser) wait(what, cond string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		text, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		b.t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, cond, err, text)
	}
}

func (b browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, jsString(sel))))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// shot writes a screenshot of the page to $MEW_SCREENSHOTS/name.png when
// it is set (a relative directory is taken from the module's root, as
// the documented command runs it from there).
func (b browser) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("MEW_SCREENSHOTS")
	if dir == "" {
		return
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir)
	}
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// prop is the selector of the i-th parameter's editor.
func prop(i int, inner string) string {
	return fmt.Sprintf(`#params > .prop[data-index="%d"] %s`, i, inner)
}

// The studio end to end, in Chromium: build a tool with the builder (an
// enum, a required integer with bounds, an array of strings), watch the
// template editor and the preview follow, fail the test form's validation
// and then pass it, run the tool on the offline model against the real
// filesystem MCP server, save, and serve the saved file with `mew agent
// mcp`, whose tools/list shows the new tool and whose call runs it.
func TestStudioInBrowser(t *testing.T) {
	d := writeDesk(t, 0o600)
	s := serve(t, d.path)
	b := browser{t: t, ctx: browsertest.New(t, 3*time.Minute)}
	b.do("open the studio", chromedp.EmulateViewport(1400, 1000), chromedp.Navigate(s.url))
	b.wait("the definition", `document.body.dataset.ready === "1" && document.querySelectorAll("#tools li").length === 1`)
	if h, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.href`)); strings.Contains(h, "secret") {
		t.Errorf("the secret stays in the address bar: %s", h)
	}

	// A new tool, built with the builder.
	b.do("new tool", chromedp.Click(chromedp.CSS("#new-tool")))
	b.wait("the new tool", `document.querySelectorAll("#tools li").length === 2 && document.querySelector("#tool-name").value === "new_tool"`)
	b.typeIn("#tool-name", "write_note")
	b.typeIn("#tool-desc", "Writes a note to notes.txt.")
	b.do("open the skill", chromedp.Click(chromedp.CSS("#skill summary")))
	b.typeIn("#skill-tags", "notes\nhome")
	b.typeIn("#skill-examples", "note that I am busy")
	b.do("add mood", chromedp.Click(chromedp.CSS("#add-param")))
	b.typeIn(prop(0, ".p-name"), "mood")
	b.typeIn(prop(0, ".f-enumText"), "calm, busy")
	b.do("add count", chromedp.Click(chromedp.CSS("#add-param")))
	b.typeIn(prop(1, ".p-name"), "count")
	b.set(prop(1, ".p-type"), "integer")
	b.set(prop(1, ".p-required"), "true")
	b.typeIn(prop(1, ".f-minimum"), "1")
	b.typeIn(prop(1, ".f-maximum"), "5")
	b.typeIn(prop(1, ".p-desc"), "How many.")
	b.do("add tags", chromedp.Click(chromedp.CSS("#add-param")))
	b.typeIn(prop(2, ".p-name"), "tags")
	b.set(prop(2, ".p-type"), "array")
	b.wait("the item editor", fmt.Sprintf(`!!document.querySelector(%s)`, jsString(prop(2, ".items .p-type"))))
	if v, _ := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS(prop(2, ".items .p-type")))); v != "string" {
		t.Errorf("array items: %q", v)
	}

	// The template editor flags an unknown placeholder and the unused
	// parameters as one types, and the preview shows what is missing.
	b.typeIn("#prompt", "note '{mood} {cnt}")
	b.wait("the unknown placeholder flagged", `document.querySelector("#prompt-highlight mark.unknown")?.textContent === "{cnt}"`)
	issues := b.text("#prompt-issues")
	for _, want := range []string{"{cnt} names neither a parameter", "the parameter count is not used", "the parameter tags is not used"} {
		if !strings.Contains(issues, want) {
			t.Errorf("template issues %q lack %q", issues, want)
		}
	}
	b.wait("the loader's verdict", `document.querySelector("#verdict").textContent === "does not load"`)
	b.typeIn("#prompt", "note '{mood} {count} {tags}' in notes.txt")
	b.wait("the template clean", `document.querySelector("#prompt-issues").children.length === 0 && document.querySelectorAll("#prompt-highlight mark.ph").length === 3`)
	b.wait("the definition loads", `document.querySelector("#verdict").textContent === "loads"`)
	// No sample values yet (no examples, no defaults): each shows as {param}.
	if p := b.text("#preview"); p != "note '{mood} {count} {tags}' in notes.txt" {
		t.Errorf("preview %q", p)
	}

	// The test form: generated from the schema, checked as one types.
	b.wait("the test form", `document.querySelectorAll("#test-form [name]").length === 3`)
	b.typeIn(`#test-form [name="count"]`, "9")
	b.wait("count refused", `document.querySelector('.t-field[data-path="count"] .t-violation').textContent !== "" && document.querySelector("#run").disabled`)
	if v := b.text(`.t-field[data-path="count"] .t-violation`); !strings.Contains(v, "5") {
		t.Errorf("violation %q", v)
	}
	b.wait("the preview follows the form", `document.querySelector("#preview").textContent === "note '{mood} 9 {tags}' in notes.txt"`)
	b.typeIn(`#test-form [name="count"]`, "3")
	b.set(`#test-form [name="mood"]`, `"busy"`)
	b.typeIn(`#test-form [name="tags"]`, "home\nwork")
	b.wait("the form valid", `!document.querySelector("#run").disabled && document.querySelector('.t-field[data-path="count"] .t-violation').textContent === ""`)
	want := `note 'busy 3 ["home","work"]' in notes.txt`
	b.wait("the filled prompt", fmt.Sprintf(`document.querySelector("#test-prompt").textContent === %s && document.querySelector("#preview").textContent === %s`, jsString(want), jsString(want)))
	b.shot("studio-builder")

	// Run: the steps stream in, the real server writes the file.
	b.do("run", chromedp.Click(chromedp.CSS("#run")))
	b.wait("the answer", `!!document.querySelector("#run-result")`)
	if cls, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector("#run-result").className`)); !strings.Contains(cls, "result") {
		t.Fatalf("the run failed: %s", b.text("#run-log"))
	}
	log := b.text("#run-log")
	for _, w := range []string{want, "Tools offered: files/create_directory", "Model turn 1", "files/write_file", `{"content":"busy 3 [\"home\",\"work\"]","path":"notes.txt"}`, "files/write_file returned", "Answer after 2 model turn(s)", "tokens", llm.OfflineLabel} {
		if !strings.Contains(log, w) {
			t.Errorf("run log lacks %q:\n%s", w, log)
		}
	}
	if note, err := os.ReadFile(filepath.Join(d.files, "notes.txt")); err != nil || string(note) != `busy 3 ["home","work"]` {
		t.Errorf("notes.txt %q, %v", note, err)
	}
	b.shot("studio-test-run")

	// Save, then serve the saved file with `mew agent mcp`.
	b.do("save", chromedp.Click(chromedp.CSS("#save")))
	b.wait("saved", `document.querySelector("#status").textContent === "Saved"`)
	def, err := toolsagent.Load(d.path)
	if err != nil {
		t.Fatalf("the saved file does not load: %v", err)
	}
	if _, ok := def.Tool("write_note"); !ok || len(def.Tools) != 2 {
		t.Fatalf("saved tools %+v", def.Tools)
	}
	if note, _ := def.Tool("write_note"); strings.Join(note.Tags, ",") != "notes,home" || strings.Join(note.Examples, ",") != "note that I am busy" {
		t.Errorf("the skill's keys as saved: tags %q, examples %q", note.Tags, note.Examples)
	}
	data, _ := os.ReadFile(d.path)
	if !strings.Contains(string(data), "# The first tool.") {
		t.Errorf("comments lost:\n%s", data)
	}
	_ = os.Remove(filepath.Join(d.files, "notes.txt"))
	agentMCP(t, d)
}

// agentMCP runs `mew agent mcp --config` on the desk in process, lists its
// tools and calls write_note.
func agentMCP(t *testing.T, d desk) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	root := cli.NewRoot(cli.Options{Stdout: outW, Stderr: &testutil.Buffer{}, Getenv: func(string) string { return "" }})
	root.SetIn(inR)
	root.SetArgs([]string{"agent", "mcp", "--config", d.path})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(ctx)
		_ = outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "studio-test", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Name == "write_note" {
			raw, _ := json.Marshal(tool.InputSchema)
			for _, w := range []string{`"enum":["calm","busy"]`, `"maximum":5`, `"minimum":1`, `"required":["count"]`, `"items":{"type":"string"}`} {
				if !strings.Contains(string(raw), w) {
					t.Errorf("inputSchema %s lacks %s", raw, w)
				}
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"echo", "write_note"}) {
		t.Errorf("tools/list: %v", names)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "write_note", Arguments: map[string]any{"mood": "calm", "count": 2, "tags": []string{"x"}}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	if note, err := os.ReadFile(filepath.Join(d.files, "notes.txt")); err != nil || string(note) != `calm 2 ["x"]` {
		t.Errorf("notes.txt after mew agent mcp: %q, %v", note, err)
	}
	_ = session.Close()
	_ = inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("mew agent mcp: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("mew agent mcp did not stop")
	}
}

// complexTool has what the builder must carry through untouched: nested
// objects, a tuple, additionalProperties, defaults and examples of every
// kind; and a description that is markup.
const complexTool = `  - name: complex
    description: '<img src=x onerror="document.title=''pwned''">'
    parameters:
      type: object
      properties:
        trip:
          type: object
          description: The trip.
          properties:
            city: {type: string, minLength: 2, maxLength: 40, examples: [Paris, "Lisbon, PT"]}
            nights: {type: number, minimum: 0.5, default: 2}
          required: [city]
          additionalProperties: false
        point:
          type: array
          items: [{type: number}, {type: number}]
        flag: {type: boolean, default: true}
        codes: {type: array, items: {type: integer, enum: [1, 2, 3]}, minItems: 1, uniqueItems: true}
      additionalProperties: false
    prompt: "Plan {trip} at {point} ({flag}, {codes}) {{literal}}"
`

// The builder writes back what it did not change exactly, adds nested
// objects, and shows the file's text as text.
func TestStudioBuilderRoundTrip(t *testing.T) {
	d := writeDesk(t, 0o600)
	f, err := os.OpenFile(d.path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(complexTool)
	_ = f.Close()
	orig, err := toolsagent.Load(d.path)
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, d.path)
	b := browser{t: t, ctx: browsertest.New(t, 2*time.Minute)}
	b.do("open the studio", chromedp.Navigate(s.url))
	b.wait("the definition", `document.body.dataset.ready === "1" && document.querySelectorAll("#tools li").length === 2`)
	b.do("select complex", chromedp.Click(chromedp.CSS("#tools li:nth-child(2) button")))
	b.wait("the file as Save writes it", `document.querySelector("#verdict").textContent === "loads" && document.querySelector("#tool-name").value === "complex"`)
	if n, _ := chromedp.Run(b.ctx, chromedp.Evaluate[int](`document.querySelectorAll("img").length`)); n != 0 {
		t.Errorf("the description became markup: %d img elements", n)
	}
	if title, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.title`)); title != "mew tools studio" {
		t.Errorf("title %q", title)
	}
	if list := b.text("#tools"); !strings.Contains(list, `<img src=x onerror=`) {
		t.Errorf("the description is not shown as text: %q", list)
	}
	// Untouched, every tool's schema is what the file says.
	sameSchemas := func(file string, except string) *toolsagent.Definition {
		t.Helper()
		def, err := toolsagent.Parse([]byte(file))
		if err != nil {
			t.Fatalf("the page's file does not load: %v\n%s", err, file)
		}
		for _, want := range orig.Tools {
			if want.Name == except {
				continue
			}
			got, ok := def.Tool(want.Name)
			if !ok {
				t.Fatalf("%s lost", want.Name)
			}
			ws, _ := want.InputSchema()
			gs, _ := got.InputSchema()
			if string(ws) != string(gs) || got.Prompt != want.Prompt || got.Description != want.Description {
				t.Errorf("%s changed:\n%s\n%s\nprompt %q", want.Name, ws, gs, got.Prompt)
			}
		}
		return def
	}
	sameSchemas(b.text("#yaml"), "")

	// A nested object, built with the builder.
	b.do("add owner", chromedp.Click(chromedp.CSS("#add-param")))
	b.typeIn(prop(4, ".p-name"), "owner")
	b.set(prop(4, ".p-type"), "object")
	b.do("add email", chromedp.Click(chromedp.CSS(prop(4, ".p-add"))))
	nested := prop(4, `.nested .prop[data-index="0"] `)
	b.typeIn(nested+".p-name", "email")
	b.set(nested+".p-required", "true")
	b.typeIn(nested+".f-maxLength", "80")
	b.wait("owner unused", `document.querySelector("#prompt-issues").textContent.includes("the parameter owner is not used")`)
	b.wait("the nested field in the form", `!!document.querySelector('#test-form [name="owner.email"]')`)
	b.wait("checked", `document.querySelector("#verdict").textContent === "loads" && document.querySelector("#yaml").textContent.includes("email")`)
	def := sameSchemas(b.text("#yaml"), "complex")
	c, _ := def.Tool("complex")
	schema, _ := c.InputSchema()
	if want := `"owner":{"type":"object","properties":{"email":{"type":"string","maxLength":80}},"required":["email"]}`; !strings.Contains(string(schema), want) {
		t.Errorf("schema %s lacks %s", schema, want)
	}
	// The form checks nested fields too.
	b.typeIn(`#test-form [name="owner.email"]`, strings.Repeat("x", 81))
	b.wait("email too long", `document.querySelector('.t-field[data-path="owner.email"] .t-violation').textContent !== ""`)
}
