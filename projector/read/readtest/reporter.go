package readtest

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
)

// CountReporter is a stand-in read.Reporter for tests of the API's plumbing:
// it counts deployments and failures per group and bucket, and takes the
// median of FinishedAt−StartedAt as the lead time. It is not the report's
// real computation (package projector/report), only simple and predictable.
func CountReporter() read.Reporter {
	return read.ReporterFunc(func(_ context.Context, req *read.ReportRequest) ([]read.ReportRow, error) {
		type key struct {
			group string
			start time.Time
		}
		rows := map[key]*read.ReportRow{}
		took := map[key][]float64{}
		for _, d := range req.Deployments {
			k := key{group(req.ReportParams, d), bucketStart(req.Bucket, d.FinishedAt)}
			r := rows[k]
			if r == nil {
				r = &read.ReportRow{Group: k.group, Start: k.start}
				rows[k] = r
			}
			r.Deployments++
			if d.Phase != "Succeeded" {
				r.Failed++
			}
			took[k] = append(took[k], d.FinishedAt.Sub(d.StartedAt).Seconds())
		}
		out := make([]read.ReportRow, 0, len(rows))
		for k, r := range rows {
			rate := float64(r.Failed) / float64(r.Deployments)
			lead := median(took[k])
			r.ChangeFailureRate, r.LeadTimeSeconds = &rate, &lead
			for _, g := range req.Gaps {
				if req.By == read.ByApp && k.group == g.Cluster+"/"+g.Namespace+"/"+g.Name ||
					req.By == read.ByCluster && k.group == g.Cluster {
					r.Incomplete = true
				}
			}
			out = append(out, *r)
		}
		slices.SortFunc(out, func(a, b read.ReportRow) int {
			return cmp.Or(cmp.Compare(a.Group, b.Group), a.Start.Compare(b.Start))
		})
		return out, nil
	})
}

func group(p read.ReportParams, d projector.Deployment) string {
	switch p.By {
	case read.ByProject:
		return d.Project
	case read.ByCluster:
		return d.Cluster
	case read.ByLabel:
		return d.Labels[p.Label]
	}
	return d.Cluster + "/" + d.Namespace + "/" + d.Name
}

// bucketStart is the UTC midnight of t's day, or of the Monday of its week.
func bucketStart(bucket string, t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if bucket == read.BucketWeek {
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	}
	return day
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
