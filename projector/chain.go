package projector

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Chain hashes an audit entry onto the hash of the previous entry of its
// partition (empty for the first). docs/projector.md ("Audit chain")
// documents the format so that anyone can check a chain over the read API
// with a short script: SHA-256 over the previous hash and then each field
// of the entry, every one written as its length in bytes, a colon, the
// bytes and a newline, in this order: prevHash, topic, partition, offset,
// at (RFC 3339 with nanoseconds, UTC), eventId, type, cluster, kind,
// namespace, name, generation, actor, before, after, and then refused, only
// for an entry that has one (a replay's), so that every other entry's hash
// is what it was before entries could be refused. Before and after are
// hashed in canonical form (CanonicalJSON), empty when absent or null, so
// that the hash depends on their value and not on the text that carries
// it. The result is lowercase hex. It fails only when before or after is
// not JSON that has a canonical form.
func Chain(prevHash string, e AuditEntry) (string, error) {
	before, err := hashedJSON(e.Before)
	if err != nil {
		return "", fmt.Errorf("audit entry %s/%d@%d: before: %w", e.Topic, e.Partition, e.Offset, err)
	}
	after, err := hashedJSON(e.After)
	if err != nil {
		return "", fmt.Errorf("audit entry %s/%d@%d: after: %w", e.Topic, e.Partition, e.Offset, err)
	}
	fields := []string{
		prevHash, e.Topic, strconv.FormatInt(int64(e.Partition), 10), strconv.FormatInt(e.Offset, 10),
		e.At.UTC().Format(time.RFC3339Nano), e.EventID, e.Type, e.Cluster, e.Kind, e.Namespace, e.Name,
		strconv.FormatInt(e.Generation, 10), e.Actor, before, after,
	}
	if e.Refused != "" {
		fields = append(fields, e.Refused)
	}
	h := sha256.New()
	for _, v := range fields {
		h.Write([]byte(strconv.Itoa(len(v))))
		h.Write([]byte{':'})
		h.Write([]byte(v))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// hashedJSON is before or after as the chain hashes it: canonical, and
// empty when absent or null.
func hashedJSON(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	c, err := CanonicalJSON(raw)
	if err != nil {
		return "", err
	}
	if string(c) == "null" {
		return "", nil
	}
	return string(c), nil
}

// BrokenLink is where an audit chain stops holding.
type BrokenLink struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Reason    string `json:"reason"`
}

// The reasons a link breaks.
const (
	reasonPartitions = "entries of several partitions given as one chain"
	reasonOrder      = "offsets out of order"
	reasonLink       = "prevHash does not match the previous entry's hash (an entry was removed, inserted or reordered)"
	reasonContent    = "hash does not match the entry's content (the entry was changed)"
)

// Verify checks the entries of one partition, in offset order, and returns
// the first link that does not hold, or nil.
func Verify(entries []AuditEntry) *BrokenLink {
	for i := range entries {
		var prev *AuditEntry
		if i > 0 {
			prev = &entries[i-1]
		}
		if b := Link(prev, entries[i]); b != nil {
			return b
		}
	}
	return nil
}

// Link checks that e follows prev in its partition's chain (prev is nil for
// a partition's first entry), so that a long chain can be checked a page at
// a time. An entry whose before or after has no canonical form was changed.
func Link(prev *AuditEntry, e AuditEntry) *BrokenLink {
	broken := func(reason string) *BrokenLink {
		return &BrokenLink{Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, Reason: reason}
	}
	prevHash := ""
	if prev != nil {
		prevHash = prev.Hash
	}
	switch {
	case prev != nil && (e.Topic != prev.Topic || e.Partition != prev.Partition):
		return broken(reasonPartitions)
	case prev != nil && e.Offset <= prev.Offset:
		return broken(reasonOrder)
	case e.PrevHash != prevHash:
		return broken(reasonLink)
	}
	if h, err := Chain(prevHash, e); err != nil || h != e.Hash {
		return broken(reasonContent)
	}
	return nil
}
