/** Thread entry for BlobVerifier: decompresses and hashes each blob it is sent, and sends it back. */
import { parentPort } from 'node:worker_threads';
import { BlobDecoder } from './blob-compressor.ts';
import { faultOf, type VerifyMessage } from './blob-verifier.ts';

const decoder = BlobDecoder.create();

parentPort!.on('message', (message: VerifyMessage) => {
  const reply: VerifyMessage = { ...message, fault: faultOf(message, decoder) };
  parentPort!.postMessage(reply, message.output === null ? [message.input] : [message.input, message.output]);
});
