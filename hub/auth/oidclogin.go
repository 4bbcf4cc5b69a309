package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// BrowserLogin reports whether the dashboard's login page offers the
// OIDC login (the oidc section's browserLogin).
func (a *Authenticator) BrowserLogin() bool { return a.oidc != nil && a.oidc.cfg.BrowserLogin }

// OAuth2Config is the client's configuration at the issuer, whose
// discovery document must have been read; redirect is the callback's URL
// unless the oidc section names one.
func (a *Authenticator) OAuth2Config(redirect string) (*oauth2.Config, error) {
	if a.oidc == nil {
		return nil, errors.New("no OIDC issuer is configured")
	}
	return a.oidc.oauthConfig(redirect)
}

// Exchange trades a login's code for the issuer's tokens and returns the
// ID token, once it verifies and carries the login's nonce; verifier is
// the login's PKCE verifier, redirect as OAuth2Config's.
func (a *Authenticator) Exchange(ctx context.Context, redirect, code, verifier, nonce string) (string, error) {
	if a.oidc == nil {
		return "", errors.New("no OIDC issuer is configured")
	}
	return a.oidc.exchange(ctx, redirect, code, verifier, nonce)
}

// oauthConfig is the client's configuration at the issuer, whose
// discovery document must have been read.
func (a *oidcAuth) oauthConfig(redirect string) (*oauth2.Config, error) {
	a.mu.Lock()
	endpoint, lastErr, ready := a.endpoint, a.lastErr, a.verifier != nil
	a.mu.Unlock()
	if !ready {
		if lastErr == nil {
			lastErr = errors.New("its discovery document is being read")
		}
		return nil, fmt.Errorf("%w: the OIDC issuer %s is not reachable yet (%w); try again", ErrIssuerUnavailable, a.cfg.Issuer, lastErr)
	}
	if a.cfg.RedirectURL != "" {
		redirect = a.cfg.RedirectURL
	}
	return &oauth2.Config{ClientID: a.cfg.ClientID, ClientSecret: a.cfg.ClientSecret, Endpoint: endpoint,
		RedirectURL: redirect, Scopes: a.cfg.Scopes}, nil
}

// exchange trades the code for the issuer's tokens and returns the ID
// token, once it verifies and carries the login's nonce.
func (a *oidcAuth) exchange(ctx context.Context, redirect, code, verifier, nonce string) (string, error) {
	conf, err := a.oauthConfig(redirect)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	ctx = oidc.ClientContext(ctx, &http.Client{Timeout: a.timeout})
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		return "", fmt.Errorf("the OIDC issuer did not exchange the login's code: %w", err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return "", errors.New("the OIDC issuer's answer has no ID token: is the openid scope allowed for this client?")
	}
	a.mu.Lock()
	v := a.verifier
	a.mu.Unlock()
	idt, err := v.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("the OIDC issuer's ID token does not verify: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return "", errors.New("the OIDC issuer's ID token is not this login's (nonce)")
	}
	return raw, nil
}
