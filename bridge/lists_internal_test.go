package bridge

import (
	"context"
	"testing"
)

// TestListAllKeepsOnlyMaxItems: a page of more than maxItems items is cut
// to a list that holds no more than maxItems, not a slice of the whole
// page (which would keep every item alive).
func TestListAllKeepsOnlyMaxItems(t *testing.T) {
	page := make([]*int, 10*maxItems)
	for i := range page {
		page[i] = new(int)
	}
	got, err := listAll(context.Background(), "items", func(context.Context, string) ([]*int, string, error) {
		return page, "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != maxItems || cap(got) > maxItems*5/4 {
		t.Errorf("len %d, cap %d: want %d, and room for no more than a few more", len(got), cap(got), maxItems)
	}
}
