// Package lease is the contract the provider and the renter speak about a
// lease: its states and the job's states with their legal ends, the lease
// book (the one writer of stored leases), the attestation and voucher
// terms both sides apply, the request/response and job protocols with
// their limits, and the helpers both sides use to call the job protocol.
// It knows neither room: node/provider and node/renter meet only here.
package lease
