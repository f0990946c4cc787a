package summary

import (
	"encoding/json"
	"testing"

	"github.com/mew-protocol/mew/protocol"
)

func TestStep(t *testing.T) {
	for _, c := range []struct {
		p    protocol.Reasoning
		want string
	}{
		{protocol.Reasoning{ActionInput: json.RawMessage(`[{"name":"calculator/add"},{"name":"files/read_file"}]`)}, "calling calculator/add, files/read_file"},
		{protocol.Reasoning{Action: "tool", ActionInput: json.RawMessage(`{"name":"calculator/add","arguments":{}}`)}, "calling calculator/add"},
		{protocol.Reasoning{Action: "respond"}, "answering"},
		{protocol.Reasoning{}, "answering"},
		{protocol.Reasoning{Message: "  looking\n at   the files "}, "looking at the files"},
		{protocol.Reasoning{Action: "search\tthe web"}, "search the web"},
	} {
		if got := Step(&c.p); got != c.want {
			t.Errorf("Step(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestResult(t *testing.T) {
	for _, c := range []struct {
		raw     string
		want    string
		isError bool
	}{
		{`{"content":[{"type":"text","text":"6"}]}`, "6", false},
		{`{"content":[{"type":"text","text":"a"},{"type":"image","data":"…"},{"type":"text","text":"b"}]}`, "a\n[image]\nb", false},
		{`{"content":[{"type":"text","text":"no such file: x"}],"isError":true}`, "no such file: x", true},
		{`{ "value" : 6 }`, `{"value":6}`, false},
		{`not json`, `not json`, false},
	} {
		got, isErr := Result(json.RawMessage(c.raw))
		if got != c.want || isErr != c.isError {
			t.Errorf("Result(%s) = %q, %v; want %q, %v", c.raw, got, isErr, c.want, c.isError)
		}
	}
}
