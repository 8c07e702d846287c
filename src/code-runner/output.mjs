// What a sandbox run printed, kept up to a limit of characters (shared by the QuickJS worker and the Python
// child process, which load it as plain JavaScript; the Python child's permissions name this file).
export class Output {
  constructor(limit) {
    this.limit = limit;
    this.size = 0;
    this.parts = [];
    this.truncated = false;
  }
  write(text) {
    if (this.size >= this.limit) {
      this.truncated = true;
      return;
    }
    const room = this.limit - this.size;
    const part = text.length > room ? text.slice(0, room) : text;
    if (part.length < text.length) this.truncated = true;
    this.parts.push(part);
    this.size += part.length;
  }
  text() {
    return this.parts.join('') + (this.truncated ? `\n[output cut at ${this.limit} characters]\n` : '');
  }
}
