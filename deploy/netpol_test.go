package deploy_test

import (
	"net"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The chart's NetworkPolicies are checked by evaluating them: no CNI runs
// beside the test apiserver to enforce them, and the policy engine of
// sigs.k8s.io/network-policy-api (policy-assistant) is a module of its own
// that v0.3.0 of network-policy-api does not hold. This is the least of
// networking.k8s.io/v1's semantics the chart's policies need, held to the
// API's documented rules by TestEvaluator.

// endpoint is one end of a connection: a pod (Namespace set), or an
// address outside the cluster (Namespace empty).
type endpoint struct {
	Namespace       string
	NamespaceLabels map[string]string
	Labels          map[string]string
	IP              string
	// Ports are a pod's named container ports, for policies that name them.
	Ports map[string]int32
}

// flow is a connection from one endpoint to another's port.
type flow struct {
	From, To endpoint
	Port     int32
	Protocol corev1.Protocol // "" is TCP
}

// allowed reports whether policies let f through: the source's egress
// and the destination's ingress must both allow it. A pod no policy of
// its namespace selects for a direction is not isolated in it.
func allowed(policies []networkingv1.NetworkPolicy, f flow) bool {
	if f.Protocol == "" {
		f.Protocol = corev1.ProtocolTCP
	}
	return direction(policies, f, networkingv1.PolicyTypeEgress) && direction(policies, f, networkingv1.PolicyTypeIngress)
}

func direction(policies []networkingv1.NetworkPolicy, f flow, dir networkingv1.PolicyType) bool {
	self, peer := f.To, f.From
	if dir == networkingv1.PolicyTypeEgress {
		self, peer = f.From, f.To
	}
	if self.Namespace == "" {
		return true // outside the cluster: no policy applies
	}
	isolated := false
	for _, p := range policies {
		if p.Namespace != self.Namespace || !matches(&p.Spec.PodSelector, self.Labels) || !slices.Contains(policyTypes(p.Spec), dir) {
			continue
		}
		isolated = true
		if dir == networkingv1.PolicyTypeIngress {
			for _, r := range p.Spec.Ingress {
				if peersMatch(r.From, p.Namespace, peer) && portsMatch(r.Ports, f, f.To) {
					return true
				}
			}
		} else {
			for _, r := range p.Spec.Egress {
				if peersMatch(r.To, p.Namespace, peer) && portsMatch(r.Ports, f, f.To) {
					return true
				}
			}
		}
	}
	return !isolated
}

// policyTypes are a policy's policyTypes, or, when it names none, Ingress and,
// if it has egress rules, Egress.
func policyTypes(s networkingv1.NetworkPolicySpec) []networkingv1.PolicyType {
	if len(s.PolicyTypes) > 0 {
		return s.PolicyTypes
	}
	t := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	if len(s.Egress) > 0 {
		t = append(t, networkingv1.PolicyTypeEgress)
	}
	return t
}

func matches(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(l))
}

// peersMatch: no peers match every endpoint; a peer with a pod or
// namespace selector matches pods only (a pod selector alone: pods of the
// policy's namespace); an ipBlock matches addresses in its CIDR and not in
// its exceptions.
func peersMatch(peers []networkingv1.NetworkPolicyPeer, ns string, e endpoint) bool {
	if len(peers) == 0 {
		return true
	}
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			if inBlock(p.IPBlock, e.IP) {
				return true
			}
		case e.Namespace == "":
		case p.NamespaceSelector != nil:
			if matches(p.NamespaceSelector, e.NamespaceLabels) && (p.PodSelector == nil || matches(p.PodSelector, e.Labels)) {
				return true
			}
		case p.PodSelector != nil:
			if e.Namespace == ns && matches(p.PodSelector, e.Labels) {
				return true
			}
		}
	}
	return false
}

func inBlock(b *networkingv1.IPBlock, addr string) bool {
	ip := net.ParseIP(addr)
	_, cidr, err := net.ParseCIDR(b.CIDR)
	if ip == nil || err != nil || !cidr.Contains(ip) {
		return false
	}
	for _, x := range b.Except {
		if _, ex, err := net.ParseCIDR(x); err == nil && ex.Contains(ip) {
			return false
		}
	}
	return true
}

// portsMatch: no ports match every port; a port of the flow's protocol
// (default TCP) matches its number, its range up to endPort, or the
// destination's container port of that name; no port number: every port.
func portsMatch(ports []networkingv1.NetworkPolicyPort, f flow, dst endpoint) bool {
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		if proto != f.Protocol {
			continue
		}
		switch {
		case p.Port == nil:
			return true
		case p.Port.Type == intstr.String:
			if n, ok := dst.Ports[p.Port.StrVal]; ok && n == f.Port {
				return true
			}
		case p.EndPort != nil:
			if f.Port >= p.Port.IntVal && f.Port <= *p.EndPort {
				return true
			}
		case p.Port.IntVal == f.Port:
			return true
		}
	}
	return false
}

// TestEvaluator holds allowed to networking.k8s.io/v1's documented rules.
func TestEvaluator(t *testing.T) {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(n int32, proto corev1.Protocol) networkingv1.NetworkPolicyPort {
		p := intstr.FromInt32(n)
		return networkingv1.NetworkPolicyPort{Port: &p, Protocol: &proto}
	}
	named := func(name string) networkingv1.NetworkPolicyPort {
		p := intstr.FromString(name)
		return networkingv1.NetworkPolicyPort{Port: &p}
	}
	end := int32(9100)
	sel := func(kv ...string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{kv[0]: kv[1]}}
	}
	policy := func(ns string, types []networkingv1.PolicyType, in []networkingv1.NetworkPolicyIngressRule, out []networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
		return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "web"), PolicyTypes: types, Ingress: in, Egress: out}}
	}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	web := endpoint{Namespace: "a", NamespaceLabels: map[string]string{"team": "a"}, Labels: map[string]string{"app": "web"}, Ports: map[string]int32{"http": 8080}}
	db := endpoint{Namespace: "a", NamespaceLabels: map[string]string{"team": "a"}, Labels: map[string]string{"app": "db"}}
	other := endpoint{Namespace: "b", NamespaceLabels: map[string]string{"team": "b"}, Labels: map[string]string{"app": "db"}}
	outside := endpoint{IP: "203.0.113.9"}
	for _, tc := range []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		f        flow
		want     bool
	}{
		{"no policy: open", nil, flow{From: other, To: web, Port: 1}, true},
		{"another namespace's policy does not isolate", []networkingv1.NetworkPolicy{policy("b", both, nil, nil)}, flow{From: other, To: web, Port: 1}, true},
		{"selected with no rules: no ingress", []networkingv1.NetworkPolicy{policy("a", both, nil, nil)}, flow{From: db, To: web, Port: 8080}, false},
		{"selected with no rules: no egress", []networkingv1.NetworkPolicy{policy("a", both, nil, nil)}, flow{From: web, To: outside, Port: 443}, false},
		{"ingress-only policy leaves egress open", []networkingv1.NetworkPolicy{policy("a", nil, nil, nil)}, flow{From: web, To: outside, Port: 443}, true},
		{"egress rules imply Egress", []networkingv1.NetworkPolicy{policy("a", nil, nil, []networkingv1.NetworkPolicyEgressRule{{Ports: []networkingv1.NetworkPolicyPort{port(53, udp)}}})},
			flow{From: web, To: outside, Port: 443}, false},
		{"port rule, any peer", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(8080, tcp)}}}, nil)},
			flow{From: other, To: web, Port: 8080}, true},
		{"port rule, other port", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(8080, tcp)}}}, nil)},
			flow{From: other, To: web, Port: 9090}, false},
		{"port rule, other protocol", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(53, udp)}}}, nil)},
			flow{From: other, To: web, Port: 53}, false},
		{"named port", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{named("http")}}}, nil)},
			flow{From: other, To: web, Port: 8080}, true},
		{"port range", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: port(9000, tcp).Port, EndPort: &end}}}}, nil)},
			flow{From: other, To: web, Port: 9050}, true},
		{"pod selector: own namespace only", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "db")}}}}, nil)},
			flow{From: other, To: web, Port: 8080}, false},
		{"pod selector: own namespace", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "db")}}}}, nil)},
			flow{From: db, To: web, Port: 8080}, true},
		{"namespace selector", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "b")}}}}, nil)},
			flow{From: other, To: web, Port: 8080}, true},
		{"namespace and pod selector, pod differs", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "b"), PodSelector: sel("app", "web")}}}}, nil)},
			flow{From: other, To: web, Port: 8080}, false},
		{"a selector matches no outside address", []networkingv1.NetworkPolicy{policy("a", both, []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}}}, nil)},
			flow{From: outside, To: web, Port: 8080}, false},
		{"ipBlock", []networkingv1.NetworkPolicy{policy("a", both, nil, []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.0/24"}}}}})},
			flow{From: web, To: outside, Port: 443}, true},
		{"ipBlock except", []networkingv1.NetworkPolicy{policy("a", both, nil, []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "203.0.113.0/24", Except: []string{"203.0.113.8/29"}}}}}})},
			flow{From: web, To: outside, Port: 443}, false},
		{"policies add up", []networkingv1.NetworkPolicy{
			policy("a", both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(1, tcp)}}}, nil),
			policy("a", both, []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{port(8080, tcp)}}}, nil)},
			flow{From: other, To: web, Port: 8080}, true},
		{"the source's egress counts too", []networkingv1.NetworkPolicy{policy("a", both, nil, nil)}, flow{From: web, To: other, Port: 8080}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allowed(tc.policies, tc.f); got != tc.want {
				t.Errorf("allowed = %v, want %v", got, tc.want)
			}
		})
	}
}
