import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * A slow client must not hold a connection (or a shutdown) for ever. Node's `requestTimeout` cuts a request
 * whose headers and body take longer than REQUEST_TIMEOUT_MS, and this module answers it with the §7 body.
 * Node stops checking once the server closes, so during shutdown this module cuts what is still arriving
 * itself: requests get at most min(REQUEST_TIMEOUT_MS, SHUTDOWN_TIMEOUT_MS / 2) more to finish sending.
 */
export interface RequestTimeouts {
  /** Fastify's clientError handler: Node's request time-out (and malformed requests) answered in the §7 shape. */
  clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void;
  /** Watches the server's connections; call once with the listening server. */
  watch(server: Server): void;
  /** Shutdown began: cut what has not fully arrived after the grace period. */
  closing(): void;
}

/** How long a refused connection may stay open for the client to read the answer and close. */
const LINGER_MS = 1000;

export function requestTimeouts(opts: { requestTimeoutMs: number; shutdownTimeoutMs: number }): RequestTimeouts {
  const sockets = new Set<Socket>();
  const current = new WeakMap<Socket, { req: IncomingMessage; res: ServerResponse }>();
  const timeoutBody = JSON.stringify({
    error: 'RequestTimeoutError',
    message: `The request did not arrive in full within ${opts.requestTimeoutMs} ms (REQUEST_TIMEOUT_MS)`,
    statusCode: 408,
  });

  /**
   * A raw answer on the socket (no response object may exist yet), then the connection is closed gracefully:
   * our side ends after the answer and what the client still sends is read and dropped until it closes too
   * (at most LINGER_MS). Destroying the socket at once, with the client's bytes still unread, makes the kernel
   * reset the connection, and a reset can discard the answer before the client reads it.
   */
  const refuse = (socket: Socket, status: string, body: string) => {
    const res = current.get(socket)?.res;
    if (!socket.writable || res?.headersSent) {
      socket.destroy();
      return;
    }
    socket.end(
      `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    socket.removeAllListeners('data');
    socket.on('data', () => {});
    socket.resume();
    setTimeout(() => socket.destroy(), LINGER_MS).unref();
  };

  return {
    clientErrorHandler(err, socket) {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return refuse(socket, '408 Request Timeout', timeoutBody);
      if (err.code === 'HPE_HEADER_OVERFLOW') {
        const body = {
          error: 'RequestHeaderFieldsTooLargeError',
          message: 'Request headers too large',
          statusCode: 431,
        };
        return refuse(socket, '431 Request Header Fields Too Large', JSON.stringify(body));
      }
      const body = { error: 'BadRequestError', message: 'Malformed HTTP request', statusCode: 400 };
      refuse(socket, '400 Bad Request', JSON.stringify(body));
    },
    watch(server) {
      server.on('connection', (socket: Socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      });
      server.on('request', (req: IncomingMessage, res: ServerResponse) => current.set(req.socket, { req, res }));
    },
    closing() {
      const grace = Math.min(opts.requestTimeoutMs, Math.floor(opts.shutdownTimeoutMs / 2));
      setTimeout(() => {
        for (const socket of sockets) {
          const request = current.get(socket);
          if (!request?.req.complete) refuse(socket, '408 Request Timeout', timeoutBody);
          else if (request.res.writableFinished) socket.destroy(); // idle between two requests
          // Otherwise the request arrived and is in flight: its answer is what shutdown waits for.
        }
      }, grace).unref();
    },
  };
}
