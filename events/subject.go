package events

import (
	"fmt"
	"strings"
)

// Subject is an event's subject: the cluster an event targets or comes from,
// and optionally one object in it. Its string form is
//
//	clusters/<cluster>
//	clusters/<cluster>/<kind>/<namespace>/<name>
//
// The subject is signed, so a reader can trust the cluster it names even
// though the Kafka key and partition are not signed.
type Subject struct {
	Cluster   string
	Kind      string
	Namespace string
	Name      string
}

const subjectPrefix = "clusters/"

// String returns the subject's wire form.
func (s Subject) String() string {
	if s.Kind == "" {
		return subjectPrefix + s.Cluster
	}
	return subjectPrefix + s.Cluster + "/" + s.Kind + "/" + s.Namespace + "/" + s.Name
}

// ParseSubject parses a subject's wire form.
func ParseSubject(v string) (Subject, error) {
	rest, ok := strings.CutPrefix(v, subjectPrefix)
	if !ok {
		return Subject{}, fmt.Errorf("subject %q: want prefix %q", v, subjectPrefix)
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return Subject{Cluster: parts[0]}, nil
	case len(parts) == 4 && parts[0] != "" && parts[1] != "" && parts[3] != "":
		return Subject{Cluster: parts[0], Kind: parts[1], Namespace: parts[2], Name: parts[3]}, nil
	}
	return Subject{}, fmt.Errorf("subject %q: want clusters/<cluster>[/<kind>/<namespace>/<name>]", v)
}
