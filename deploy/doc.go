// Package deploy holds no code: it owns the deployment files (the repository
// root's docker-compose.yml; deploy/Dockerfile, fleetscope.env.example and
// run-local.sh) and the tests that keep them in step with the server's
// configuration (server.Env) and the fleetscope command. It must not be
// imported.
package deploy
