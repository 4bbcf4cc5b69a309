package read

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/argosyproj/argosy/projector"
)

// ChainPosition is an audit entry's place in the chains: its partition and
// offset. Its string form, TOPIC/PARTITION/OFFSET, is the after parameter
// of GET /api/v1/audit/chain.
type ChainPosition struct {
	projector.Partition
	Offset int64
}

// String returns p as TOPIC/PARTITION/OFFSET.
func (p ChainPosition) String() string {
	return p.Topic + "/" + strconv.FormatInt(int64(p.Partition.Partition), 10) + "/" + strconv.FormatInt(p.Offset, 10)
}

// PositionOf returns where e is in the chains.
func PositionOf(e projector.AuditEntry) ChainPosition {
	return ChainPosition{Partition: projector.Partition{Topic: e.Topic, Partition: e.Partition}, Offset: e.Offset}
}

// parsePosition parses TOPIC/PARTITION/OFFSET, as openapi.yaml's pattern
// for it says: Kafka topic names hold no slash, a partition has at most 9
// digits and an offset at most 18, so that both always fit.
func parsePosition(v string) (ChainPosition, bool) {
	m := positionRe.FindStringSubmatch(v)
	if m == nil {
		return ChainPosition{}, false
	}
	part, err1 := strconv.ParseInt(m[2], 10, 32)
	off, err2 := strconv.ParseInt(m[3], 10, 64)
	if err1 != nil || err2 != nil {
		return ChainPosition{}, false
	}
	return ChainPosition{Partition: projector.Partition{Topic: m[1], Partition: int32(part)}, Offset: off}, true
}

var positionRe = regexp.MustCompile(`^([^/]+)/([0-9]{1,9})/([0-9]{1,18})$`)

// chain serves the audit entries as stored, for whoever checks the chains
// without Argosy: every partition's, in topic, partition and offset order,
// from after the position given.
func (h *Handler) chain(r *http.Request) (any, error) {
	p, err := parseParams(r, "after", "limit")
	if err != nil {
		return nil, err
	}
	// The chains hold every cluster's and project's entries, content
	// included, and cannot be checked in part: a limited caller may not
	// read them (its verdicts are at /api/v1/audit/verify).
	if _, c, pr := scopeOf(r.Context()); c || pr {
		return nil, &apiError{status: http.StatusForbidden, msg: "the audit chains hold every cluster's and project's entries: " +
			"a token limited to clusters or projects may not read them whole; GET /api/v1/audit/verify gives their verdicts"}
	}
	limit := p.integer("limit", MaxAuditLimit, MaxAuditLimit)
	var after *ChainPosition
	if v, ok := p.values["after"]; ok {
		pos, ok := parsePosition(v)
		if !ok {
			p.fail(badRequest("parameter \"after\": %q is not TOPIC/PARTITION/OFFSET, such as argosy.config/0/41", v))
		}
		after = &pos
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	entries, err := ChainPage(r.Context(), h.q, after, limit)
	if err != nil {
		return nil, err
	}
	return List[projector.AuditEntry]{Items: nonNil(entries)}, nil
}

// ChainPage returns up to limit audit entries as stored (each with its own
// actor, nothing joined), in topic, partition and offset order, starting
// after the position after (nil for the first entry of all). Topics are
// ordered by their bytes, whatever the store's collation. A page shorter
// than limit is the last.
func ChainPage(ctx context.Context, q projector.Chains, after *ChainPosition, limit int) ([]projector.AuditEntry, error) {
	var out []projector.AuditEntry
	if after != nil {
		es, err := q.Chain(ctx, after.Partition, after.Offset, limit)
		if err != nil {
			return nil, fmt.Errorf("reading the audit chain of %s: %w", after, err)
		}
		if out = es; len(out) >= limit {
			return out, nil
		}
	}
	ps, err := q.ChainPartitions(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing audit partitions: %w", err)
	}
	slices.SortFunc(ps, comparePartitions)
	for _, p := range ps {
		if after != nil && comparePartitions(p, after.Partition) <= 0 {
			continue
		}
		es, err := q.Chain(ctx, p, -1, limit-len(out))
		if err != nil {
			return nil, fmt.Errorf("reading the audit chain of %s/%d: %w", p.Topic, p.Partition, err)
		}
		if out = append(out, es...); len(out) >= limit {
			break
		}
	}
	return out, nil
}

func comparePartitions(a, b projector.Partition) int {
	return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
