// Cursor pagination for the drills list: the server gives `next_cursor` for older items; going
// back to newer pages replays the cursors seen on the way.

export class CursorPager {
  private stack: (string | null)[] = [null];

  /** The cursor of the page shown now (null for the first page). */
  get current(): string | null {
    return this.stack[this.stack.length - 1]!;
  }

  get page(): number {
    return this.stack.length;
  }

  get hasNewer(): boolean {
    return this.stack.length > 1;
  }

  older(nextCursor: string | null): boolean {
    if (!nextCursor) return false;
    this.stack.push(nextCursor);
    return true;
  }

  newer(): boolean {
    if (this.stack.length <= 1) return false;
    this.stack.pop();
    return true;
  }

  reset(): void {
    this.stack = [null];
  }
}
