import type { QueueOperation } from '../common';
import { description } from './description';
import { execute } from './execute';

export const dequeueOperation: QueueOperation = { description, execute };
