package natscluster

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                            "nats://127.0.0.1:4222",
		"nats://mew:sekret@a:4222,tls://mew:sekret@b:4222": "nats://mew:xxxxx@a:4222,tls://mew:xxxxx@b:4222",
		"nats://sekret@a:4222":                             "nats://xxxxx@a:4222",
		"nats://mew:sekret@a:4222/%zz":                     "(a URL that does not parse)",
		"":                                                 "",
	} {
		got := Redact(in)
		if got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(got, "sekret") {
			t.Errorf("Redact(%q) kept the password", in)
		}
	}
}
