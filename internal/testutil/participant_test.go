package testutil_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mew-protocol/mew/internal/testutil"
)

// ArithTool answers op of its arguments, and refuses arguments that are not
// two numbers with an error that names the tool.
func TestArithTool(t *testing.T) {
	sub := testutil.ArithTool("sub", "Subtract", func(a, b float64) float64 { return a - b })
	if sub.Name != "sub" || sub.Description != "Subtract" || string(sub.InputSchema) != testutil.NumbersSchema {
		t.Errorf("tool %+v", sub)
	}
	got, err := sub.Execute(context.Background(), json.RawMessage(`{"a":7,"b":2}`))
	if err != nil || got != 5.0 {
		t.Errorf("7 - 2: %v, %v", got, err)
	}
	for _, bad := range []string{`{"a":"seven","b":2}`, `[1,2]`, `{"a":`, `null"`} {
		if _, err := sub.Execute(context.Background(), json.RawMessage(bad)); err == nil || !strings.HasPrefix(err.Error(), "sub: ") {
			t.Errorf("%s: %v, want an error of sub's", bad, err)
		}
	}
}
