package bench

import (
	"math/rand/v2"
	"testing"
	"time"
)

// within reports whether got is within the histogram's resolution above want (and never below).
func within(got, want time.Duration) bool {
	return got >= want && float64(got-want) <= float64(want)/histSub+1
}

func TestHistogramEmpty(t *testing.T) {
	t.Parallel()
	var h Histogram
	if h.Count() != 0 || h.Percentile(0.5) != 0 || h.Max() != 0 || h.Min() != 0 || h.Mean() != 0 {
		t.Errorf("empty histogram: count %d p50 %v max %v min %v mean %v", h.Count(), h.Percentile(0.5), h.Max(), h.Min(), h.Mean())
	}
}

func TestHistogramUniform(t *testing.T) {
	t.Parallel()
	var h Histogram
	const n = 100_000
	for i := 1; i <= n; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	if h.Count() != n {
		t.Fatalf("count = %d, want %d", h.Count(), n)
	}
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999} {
		want := time.Duration(q*n) * time.Microsecond
		if got := h.Percentile(q); !within(got, want) {
			t.Errorf("p%v = %v, want %v (+1/64)", q*100, got, want)
		}
	}
	if h.Max() != n*time.Microsecond || h.Min() != time.Microsecond {
		t.Errorf("min, max = %v, %v, want 1µs, 100ms", h.Min(), h.Max())
	}
	if h.Percentile(1) != h.Max() || h.Percentile(0) != h.Min() {
		t.Errorf("p100 = %v, p0 = %v, want max and min", h.Percentile(1), h.Percentile(0))
	}
	if mean, want := h.Mean(), (n+1)*time.Microsecond/2; mean != want {
		t.Errorf("mean = %v, want %v", mean, want)
	}
}

func TestHistogramSmallValuesExact(t *testing.T) {
	t.Parallel()
	var h Histogram
	for i := range 64 {
		h.Record(time.Duration(i))
	}
	for i := range 64 {
		q := (float64(i) + 1) / 64
		if got := h.Percentile(q); got != time.Duration(i) {
			t.Errorf("Percentile(%v) = %v, want %dns", q, got, i)
		}
	}
}

// A bimodal distribution: 90 % fast, 10 % slow; p50 and p90 must land in the fast mode, p99 in the slow.
func TestHistogramBimodal(t *testing.T) {
	t.Parallel()
	var h Histogram
	for i := range 1000 {
		if i%10 == 0 {
			h.Record(50 * time.Millisecond)
		} else {
			h.Record(200 * time.Microsecond)
		}
	}
	if p := h.Percentile(0.5); !within(p, 200*time.Microsecond) {
		t.Errorf("p50 = %v, want 200µs", p)
	}
	if p := h.Percentile(0.9); !within(p, 200*time.Microsecond) {
		t.Errorf("p90 = %v, want 200µs", p)
	}
	if p := h.Percentile(0.99); p != 50*time.Millisecond {
		t.Errorf("p99 = %v, want 50ms (clamped to max)", p)
	}
}

func TestHistogramMerge(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var a, b, all Histogram
	for i := range 20_000 {
		d := time.Duration(rng.ExpFloat64() * float64(time.Millisecond))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var m Histogram
	m.Merge(&a)
	m.Merge(&b)
	m.Merge(&Histogram{}) // merging an empty one changes nothing
	if m != all {
		t.Fatalf("merged histogram differs from one fed everything: count %d vs %d, min %v vs %v, max %v vs %v",
			m.Count(), all.Count(), m.Min(), all.Min(), m.Max(), all.Max())
	}
	// Exponential with mean 1ms: the median is ln 2 ms.
	if p := m.Percentile(0.5); p < 650*time.Microsecond || p > 740*time.Microsecond {
		t.Errorf("p50 = %v, want about 693µs", p)
	}
}

func TestHistogramExtremes(t *testing.T) {
	t.Parallel()
	var h Histogram
	h.Record(-time.Second)
	h.Record(100 * time.Hour) // beyond the last bucket's range
	if h.Min() != 0 || h.Max() != 100*time.Hour {
		t.Errorf("min, max = %v, %v, want 0, 100h", h.Min(), h.Max())
	}
	if p := h.Percentile(1); p != 100*time.Hour {
		t.Errorf("p100 = %v, want 100h", p)
	}
	if p := h.Percentile(0.5); p != 0 {
		t.Errorf("p50 = %v, want 0", p)
	}
}

func TestBucketsAreContiguous(t *testing.T) {
	t.Parallel()
	for i := range histBuckets - 1 {
		up := bucketUpper(i)
		if bucketOf(up) != i || bucketOf(up+1) != i+1 {
			t.Fatalf("bucket %d: upper %d maps to %d, upper+1 to %d", i, up, bucketOf(up), bucketOf(up+1))
		}
	}
}
