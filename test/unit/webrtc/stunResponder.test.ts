import dgram from "node:dgram";
import { createLogger } from "../../../src/log";
import { StunResponder } from "../../../src/webrtc/stunResponder";

// The responder on a real UDP socket (loopback, an ephemeral port), asked by a real socket.

const log = createLogger("silent");

function ask(port: number, message: Buffer): Promise<{ answer: Buffer; localPort: number }> {
  const socket = dgram.createSocket("udp4");
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no STUN answer within 2 s")), 2000);
    socket.on("message", (answer) => {
      clearTimeout(timer);
      const localPort = socket.address().port;
      socket.close();
      resolve({ answer, localPort });
    });
    socket.bind(0, "127.0.0.1", () => socket.send(message, port, "127.0.0.1"));
  });
}

const binding = () => {
  const h = Buffer.alloc(20);
  h.writeUInt16BE(0x0001, 0);
  h.writeUInt32BE(0x2112a442, 4);
  Buffer.from("abcdefghijkl").copy(h, 8);
  return h;
};

describe("StunResponder", () => {
  it("answers a Binding request with the asker's own port, and a second responder on a taken port stands aside", async () => {
    const stun = (await StunResponder.listen(0, "127.0.0.1", log))!;
    try {
      const { answer, localPort } = await ask(stun.port, binding());
      expect(answer.readUInt16BE(0)).toBe(0x0101);
      expect(answer.readUInt16BE(26) ^ 0x2112).toBe(localPort);
      await expect(StunResponder.listen(stun.port, "127.0.0.1", log)).resolves.toBeUndefined();
    } finally {
      await stun.close();
    }
  });
});
