package read

import (
	"context"
	"fmt"
	"net/http"

	"github.com/argosyproj/argosy/projector"
)

func (h *Handler) verify(r *http.Request) (any, error) {
	if _, err := parseParams(r); err != nil {
		return nil, err
	}
	return VerifyChains(r.Context(), h.q, h.chainPage)
}

// VerifyChains checks the audit chain of every partition that has one, from
// its first entry, reading page entries at a time, and reports the first
// broken link of each.
func VerifyChains(ctx context.Context, q projector.Chains, page int) (*Verification, error) {
	if page <= 0 {
		page = DefaultChainPage
	}
	ps, err := q.ChainPartitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing audit partitions: %w", err)
	}
	v := &Verification{OK: true, Partitions: make([]PartitionCheck, 0, len(ps))}
	for _, p := range ps {
		c, err := verifyPartition(ctx, q, p, page)
		if err != nil {
			return nil, err
		}
		v.Partitions = append(v.Partitions, c)
		if c.Broken != nil && v.OK {
			v.OK, v.Broken = false, c.Broken
		}
	}
	return v, nil
}

// verifyPartition walks one partition's chain page by page. Each page is
// checked by projector.Verify's rules, carried across page boundaries by
// link: the first entry of a page must follow the last of the one before.
func verifyPartition(ctx context.Context, q projector.Chains, p projector.Partition, page int) (PartitionCheck, error) {
	c := PartitionCheck{Topic: p.Topic, Partition: p.Partition}
	var prev *projector.AuditEntry
	after := int64(-1)
	for {
		entries, err := q.Chain(ctx, p, after, page)
		if err != nil {
			return c, fmt.Errorf("reading the audit chain of %s/%d after offset %d: %w", p.Topic, p.Partition, after, err)
		}
		for i := range entries {
			c.Entries++
			if b := link(p, prev, &entries[i]); b != nil {
				c.Broken, c.Head = b, ""
				return c, nil
			}
			prev = &entries[i]
			c.Head = prev.Hash
		}
		if len(entries) < page {
			return c, nil
		}
		after = prev.Offset
	}
}

// link checks that e follows prev (nil for the first entry) in p's chain.
func link(p projector.Partition, prev, e *projector.AuditEntry) *projector.BrokenLink {
	if e.Topic != p.Topic || e.Partition != p.Partition {
		return &projector.BrokenLink{Topic: e.Topic, Partition: e.Partition, Offset: e.Offset,
			Reason: "entries of several partitions given as one chain"}
	}
	return projector.Link(prev, *e)
}
