package heads
