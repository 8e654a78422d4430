/** A clock tests move by hand. */
export class ManualClock {
  private current: Date;
  constructor(start: string) {
    this.current = new Date(start);
  }
  readonly clock = (): Date => new Date(this.current);
  set(iso: string): void {
    this.current = new Date(iso);
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}
