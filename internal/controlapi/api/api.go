// Package api is the control API's contract: every method's wire name with
// its request and response types, and every notification with its payload.
//
// The server (controlapi.Handle), the CLI, the TUI and the demo all name
// methods through these constants, so a method is spelled in one place and a
// caller cannot send the wrong request type or decode the wrong result. It
// imports only the packages whose frozen DTOs it references.
package api

// Method is a control-API method: its wire name, typed by its request and
// response so controlapi.Call and controlapi.Handle check both at compile time.
type Method[Req, Resp any] string

// Name is the method's wire name.
func (m Method[Req, Resp]) Name() string { return string(m) }

// Notification is a server→client notification: its wire name, typed by
// its params.
type Notification[P any] string

// Name is the notification's wire name.
func (n Notification[P]) Name() string { return string(n) }

// Empty is the request of a method that takes no params; it is sent as {}.
type Empty struct{}
