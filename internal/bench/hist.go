package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram layout: values below histSub nanoseconds have a bucket each; above, every power of
// two is split into histSub equal buckets, so a bucket is at most 1/histSub (1.6 %) wide relative
// to its values. Values of 2^(histMaxExp+1) ns (about 36 minutes) and more share the last bucket.
const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	histMaxExp  = 40
	histBuckets = (histMaxExp - histSubBits + 2) * histSub
)

// Histogram counts durations in fixed log-linear buckets with a relative resolution of 1/64.
// Recording allocates nothing; two histograms merge by adding their counts. The zero value is an
// empty histogram ready to use. A Histogram is not safe for concurrent use: give each goroutine
// its own and merge them afterwards.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      float64
	min, max time.Duration
}

// Record adds one duration. Negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(d)]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
}

// Merge adds the counts of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of recorded durations.
func (h *Histogram) Count() uint64 { return h.n }

// Min returns the smallest recorded duration, exactly; 0 when empty.
func (h *Histogram) Min() time.Duration { return h.min }

// Max returns the largest recorded duration, exactly; 0 when empty.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean returns the average of the recorded durations; 0 when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Percentile returns a duration that at least the fraction q (0..1) of the recorded durations
// do not exceed: the upper bound of the bucket holding the sample of rank ⌈q·n⌉, kept within
// [Min, Max]. It overstates the true value by at most 1/64 of it. Percentile(0) is Min,
// Percentile(1) is Max, and an empty histogram gives 0.
func (h *Histogram) Percentile(q float64) time.Duration {
	switch {
	case h.n == 0:
		return 0
	case q <= 0:
		return h.min
	case q >= 1:
		return h.max
	}
	rank := max(uint64(math.Ceil(q*float64(h.n))), 1)
	var seen uint64
	for i, c := range h.counts[:histBuckets-1] {
		seen += c
		if seen >= rank {
			return min(max(bucketUpper(i), h.min), h.max)
		}
	}
	return h.max // the last bucket is open-ended
}

// bucketOf returns the index of the bucket holding d (d >= 0).
func bucketOf(d time.Duration) int {
	v := uint64(d)
	if v < histSub {
		return int(v)
	}
	exp := bits.Len64(v) - 1
	if exp > histMaxExp {
		return histBuckets - 1
	}
	shift := exp - histSubBits
	return (shift+1)*histSub + int((v>>shift)&(histSub-1))
}

// bucketUpper returns the largest duration that falls into bucket i.
func bucketUpper(i int) time.Duration {
	if i < histSub {
		return time.Duration(i)
	}
	shift := i/histSub - 1
	lower := uint64(histSub+i%histSub) << shift
	return time.Duration(lower + 1<<shift - 1)
}
