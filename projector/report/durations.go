package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"
)

// Durations summarises a set of durations. In JSON the median, 90th
// percentile and mean are seconds: {"count": 3, "medianSeconds": 7200,
// "p90Seconds": 14400, "meanSeconds": 8400}.
type Durations struct {
	// Count is the number of durations.
	Count int
	// Median is the middle duration, or the mean of the two middle ones
	// for an even count, truncated to the nanosecond.
	Median time.Duration
	// P90 is the 90th percentile by nearest rank: the smallest duration
	// that at least 90% of the durations do not exceed.
	P90 time.Duration
	// Mean is the arithmetic mean, truncated to the nanosecond.
	Mean time.Duration
}

// summarize returns the summary of ds, nil if it is empty. It sorts ds.
func summarize(ds []time.Duration) *Durations {
	n := len(ds)
	if n == 0 {
		return nil
	}
	slices.Sort(ds)
	median := ds[n/2]
	if n%2 == 0 {
		lo := ds[n/2-1]
		median = lo + (median-lo)/2
	}
	p90 := ds[(9*n+9)/10-1] // rank ⌈0.9 n⌉, counted from 1
	return &Durations{Count: n, Median: median, P90: p90, Mean: mean(ds)}
}

// mean returns the mean of ds, truncated, without overflowing where the sum
// would: the quotients and remainders by len(ds) are summed apart.
func mean(ds []time.Duration) time.Duration {
	n := int64(len(ds))
	var q, r int64
	for _, d := range ds {
		q += int64(d) / n
		r += int64(d) % n
	}
	return time.Duration(q + r/n)
}

type durationsJSON struct {
	Count         int     `json:"count"`
	MedianSeconds float64 `json:"medianSeconds"`
	P90Seconds    float64 `json:"p90Seconds"`
	MeanSeconds   float64 `json:"meanSeconds"`
}

// MarshalJSON writes the median, 90th percentile and mean in seconds.
func (d Durations) MarshalJSON() ([]byte, error) {
	return json.Marshal(durationsJSON{Count: d.Count, MedianSeconds: d.Median.Seconds(), P90Seconds: d.P90.Seconds(), MeanSeconds: d.Mean.Seconds()})
}

// UnmarshalJSON reads what MarshalJSON writes, to the nanosecond.
func (d *Durations) UnmarshalJSON(b []byte) error {
	var j durationsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("decode durations: %w", err)
	}
	*d = Durations{Count: j.Count, Median: seconds(j.MedianSeconds), P90: seconds(j.P90Seconds), Mean: seconds(j.MeanSeconds)}
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
