// Package auth is who may call Argosy's APIs, and what each caller may do:
// the tokens file (bearer tokens by their SHA-256, and an OIDC issuer whose
// ID tokens count too, with the roles of their groups), followed while it
// runs; the principal a credential speaks for, with its role and its scope
// of projects and clusters (a read.Scope); and the least role each action
// needs. The hub's server authenticates its API and dashboard with it, and
// `argosy projector` its read API, with the same file: the two answer one
// token the same way. It links neither the hub's server nor Argo CD.
package auth
