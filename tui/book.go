package tui

// asked is what a book holds: a proposal or an elicitation.
type asked interface {
	key() string
	open() bool
}

// book is what the UI asks the user about, proposals or elicitations:
// every one seen, numbered from 1, found by id, the latest max of them.
type book[T asked] struct {
	all  []T
	byID map[string]T
	last int // the last number given
	max  int
}

func newBook[T asked](max int) book[T] { return book[T]{byID: map[string]T{}, max: max} }

// next gives the next number.
func (b *book[T]) next() int {
	b.last++
	return b.last
}

// put keeps x, letting the oldest go past max.
func (b *book[T]) put(x T) {
	b.all = append(b.all, x)
	b.byID[x.key()] = x
	if len(b.all) > b.max {
		delete(b.byID, b.all[0].key())
		b.all = b.all[1:]
	}
}

// stillOpen returns the items still open, oldest first.
func (b *book[T]) stillOpen() []T {
	var out []T
	for _, x := range b.all {
		if x.open() {
			out = append(out, x)
		}
	}
	return out
}
