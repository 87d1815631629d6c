// Package centrifugo load-tests Centrifugo (github.com/centrifugal/centrifugo),
// a real-time messaging server nobody here wrote, with Headroom from a module
// of its own: the way a team load-tests its own service. See README.md.
package centrifugo
