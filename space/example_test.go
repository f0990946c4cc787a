package space_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/mew-protocol/mew/space"
)

func ExampleLoad() {
	dir, err := os.MkdirTemp("", "space")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	config := `
space:
  id: demo
participants:
  human:
    capabilities: [{kind: "*"}]
  helper:
    command: mew
    args: [agent, run, --token, "${TOKEN}"]
    auto_start: true
    colour: blue
    capabilities:
      - kind: chat
      - {kind: mcp/request, payload: {method: tools/call, params: {name: "read_*"}}}
defaults:
  capabilities: [{kind: chat}]
`
	if err := os.WriteFile(filepath.Join(dir, "space.yaml"), []byte(config), 0o644); err != nil {
		log.Fatal(err)
	}

	path, err := space.FindConfig(dir)
	if err != nil {
		log.Fatal(err)
	}
	c, err := space.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("space:", c.Space.ID)
	for _, p := range c.Participants {
		fmt.Printf("%s: %s\n", p.ID, c.Capabilities(p))
	}
	fmt.Println("unknown keys:", c.Unknown)

	store := space.TokenStore{Dir: filepath.Join(c.MewDir, "tokens")}
	tokens, err := store.Tokens(c.Participant("helper"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("helper's token is", len(tokens[0]), "characters long")
	// Output:
	// space: demo
	// human: [{"kind":"*"}]
	// helper: [{"kind":"chat"} {"kind":"mcp/request","payload":{"method":"tools/call","params":{"name":"read_*"}}}]
	// unknown keys: [participants.helper.colour]
	// helper's token is 43 characters long
}

func ExampleParse_error() {
	_, err := space.Parse([]byte(`
space: {id: demo}
participants:
  helper:
    auto_start: yes please
`), "space.yaml")
	fmt.Println(err)
	// Output:
	// space.yaml:5: participants.helper.auto_start: want a boolean, got a string ("yes please")
}
