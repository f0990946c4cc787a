package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/mew-protocol/mew/a2a"
)

// A card of @a2a-js/sdk 1.x writes a security scheme as ts-proto's
// oneof; it reads as the specification's.
func TestSecuritySchemeOfJSSDK(t *testing.T) {
	var card a2a.AgentCard
	raw := `{"name":"x","securitySchemes":{"bearer":{"scheme":{"$case":"httpAuthSecurityScheme","value":{"description":"","scheme":"Bearer","bearerFormat":""}}},` +
		`"key":{"apiKeySecurityScheme":{"location":"header","name":"X-Key"}}}}`
	if err := json.Unmarshal([]byte(raw), &card); err != nil {
		t.Fatal(err)
	}
	if h := card.SecuritySchemes["bearer"].HTTPAuth; h == nil || h.Scheme != "Bearer" {
		t.Errorf("bearer %+v", card.SecuritySchemes["bearer"])
	}
	if k := card.SecuritySchemes["key"].APIKey; k == nil || k.Name != "X-Key" {
		t.Errorf("key %+v", card.SecuritySchemes["key"])
	}
}
