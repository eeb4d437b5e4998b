// Package channels holds Raven's chat surfaces: outlets that deliver spine
// messages (cli, tui, webhook, telegram) and the inbound dispatch into the spine.
package channels
